import { Worker } from 'node:worker_threads';
import type { WorkerOptions } from 'node:worker_threads';

/** Starts the worker module `name` next to the module at `from` (its import.meta.url). From source (tsx, vitest) it is
 * TypeScript, and a worker does not inherit the loader, so a bootstrap registers tsx's first. */
export function startModuleWorker(from: string, name: string, options: WorkerOptions = {}): Worker {
  const fromSource = from.endsWith('.ts');
  const file = new URL(`./${name}${fromSource ? '.ts' : '.js'}`, from);
  if (!fromSource) return new Worker(file, options);
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}
