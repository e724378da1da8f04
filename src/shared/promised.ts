/** Runs a synchronous implementation of a promise port: a throw becomes a rejection, never a synchronous throw. */
export function promised<T>(run: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(run()));
}
