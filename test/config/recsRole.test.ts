import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/env.js';
import { roleLagging } from '../../src/observability/readiness.js';

const PG = 'postgres://postgres@127.0.0.1:5432/test';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems;
  }
}

describe('RECS_ROLE', () => {
  it('is all by default, exactly as a process without it', () => {
    const config = loadConfig({});
    expect(config.recsRole).toBe('all');
    expect(config.recsMaxLagSeconds).toBe(60);
  });

  it('takes serve and learn with DATABASE_URL', () => {
    expect(loadConfig({ RECS_ROLE: 'serve', DATABASE_URL: PG }).recsRole).toBe('serve');
    expect(loadConfig({ RECS_ROLE: 'learn', DATABASE_URL: PG, RECS_MAX_LAG_SECONDS: '5' })).toMatchObject({ recsRole: 'learn', recsMaxLagSeconds: 5 });
  });

  it('refuses names outside the contract, as a careless operator would spell them', () => {
    for (const raw of ['Serve', 'master', 'learner', 'serve,learn', 'both']) {
      expect(problems({ RECS_ROLE: raw, DATABASE_URL: PG }).join('\n')).toContain(`RECS_ROLE must be one of all, serve, learn, got "${raw}"`);
    }
  });

  it('refuses serve and learn without PostgreSQL, and with BACKEND=rest', () => {
    expect(problems({ RECS_ROLE: 'serve' }).join('\n')).toContain('RECS_ROLE=serve needs DATABASE_URL (PostgreSQL)');
    expect(problems({ RECS_ROLE: 'learn', DATABASE_URL: '' }).join('\n')).toContain('RECS_ROLE=learn needs DATABASE_URL (PostgreSQL)');
    // a bad URL says so once, not twice
    expect(problems({ RECS_ROLE: 'serve', DATABASE_URL: 'mysql://x' }).filter((p) => p.includes('RECS_ROLE'))).toEqual([]);
    expect(problems({ RECS_ROLE: 'serve', DATABASE_URL: PG, BACKEND: 'rest', APIKEY_SERVICE_URL: 'http://a', RECS_SERVICE_URL: 'http://b', RECS_API_KEY: 'k' }).join('\n'))
      .toContain('RECS_ROLE=serve needs BACKEND=embedded');
  });

  it('RECS_MAX_LAG_SECONDS is bounded', () => {
    expect(problems({ RECS_MAX_LAG_SECONDS: '0' }).join('\n')).toContain('RECS_MAX_LAG_SECONDS must be a whole number from 1 to 86400');
  });
});

describe('roleLagging', () => {
  const serve = { role: 'serve' as const, learnerActive: true, maxLagSeconds: 60 };
  it('is true only for a serve replica whose lists are older than the lag, or which has none', () => {
    expect(roleLagging(undefined)).toBe(false);
    expect(roleLagging({ ...serve, listsAgeSeconds: 10 })).toBe(false);
    expect(roleLagging({ ...serve, listsAgeSeconds: 61 })).toBe(true);
    expect(roleLagging({ ...serve, listsAgeSeconds: null })).toBe(true);
    expect(roleLagging({ ...serve, role: 'learn', listsAgeSeconds: null })).toBe(false);
  });
});
