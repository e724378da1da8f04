/** Runs `total` operations `concurrency` at a time, in order of `i`; their results by `i`. */
export async function pool<T>(total: number, concurrency: number, run: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(total);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        results[i] = await run(i);
      }
    }),
  );
  return results;
}
