/** The nice value of a rebuild thread: `lower` below the thread that starts it (`own`), at most 19 (the least). */
export function rebuildNice(own: number, lower: number): number {
  return Math.min(19, own + lower);
}
