/** Server CPU time from /proc, for the benchmarks' CPU a request (not a test). */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time a process has used so far, in ms: the sum over its threads of the nanoseconds on a
 * CPU in /proc/<pid>/task/<tid>/schedstat (user and system alike). /proc/<pid>/stat counts in
 * clock ticks of 10 ms: over a cold run of a few hundred milliseconds of CPU that was a
 * quantisation of several per cent. Falls back to stat where schedstat is missing.
 */
export function cpuMsOf(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended between the listing and the read: its time is in no thread now
      }
    }
    return ns / 1e6;
  } catch {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  }
}
