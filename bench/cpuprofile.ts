/**
 * Summarises a .cpuprofile written by `node --cpu-prof` (not a test):
 *   npx tsx bench/cpuprofile.ts <file.cpuprofile> [top=25]
 * Prints the functions with the most self time, and the most total (inclusive) time, as shares
 * of the samples: what `npm run bench -- --cpu-prof <dir>` is for.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: bench/cpuprofile.ts <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const label = (node: ProfileNode): string => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/');
  return `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
};

const self = new Map<string, number>();
const total = new Map<string, number>();
for (const sample of profile.samples) {
  const node = byId.get(sample)!;
  self.set(label(node), (self.get(label(node)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
    const name = label(byId.get(id)!);
    if (seen.has(name)) continue;
    seen.add(name);
    total.set(name, (total.get(name) ?? 0) + 1);
  }
}
const n = profile.samples.length;
const print = (title: string, counts: Map<string, number>): void => {
  console.log(`\n${title} (${n} samples)`);
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((count / n) * 100).toFixed(1).padStart(5)}%  ${name}`);
  }
};
print('self', self);
print('total', total);
