import { describe, expect, it } from 'vitest';
import { runNode } from '../helpers/runNode.js';

/** `npm run bench -- <args>`, without npm: only its argument handling is run here, never a benchmark. */
const bench = (args: string[]) => runNode(['--import', 'tsx', 'bench/run.ts', ...args]);

describe('npm run bench', () => {
  it('prints its usage for --help and exits 0', async () => {
    const help = await bench(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run bench \[-- options\]/);
    expect(help.stdout).toContain('--only <ids>');
    expect(help.stderr).toBe('');
  });

  it('refuses an unknown flag or scenario in one line, with exit code 2', async () => {
    for (const args of [['--frobnicate'], ['--only', 'emb,nonsense'], ['--duration', 'ten'], ['--roles-events', '100k'], ['--roles-events', '10000,']]) {
      const result = await bench(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^bench: [^\n]+\(npm run bench -- --help lists the options\)\n$/);
      expect(result.stdout).toBe('');
    }
  });
});
