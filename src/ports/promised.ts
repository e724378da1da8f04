/**
 * How a synchronous implementation answers a port that returns a promise: `run` runs at once,
 * and its value, or what it threw, settles the promise. The same as an `async` function with no
 * `await` (a throw becomes a rejection, never a synchronous throw), without the `async` the
 * type-checked lint refuses there.
 */
export function promised<T>(run: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(run()));
}
