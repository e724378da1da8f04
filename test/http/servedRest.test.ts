import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { createGateway } from '../../src/http/server.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

describe('the served REST interfaces log through the gateway\'s logger', () => {
  it('logs an unexpected failure whole at error level and answers the interface\'s 500 with nothing of it', async () => {
    const opened = await storeKinds[0]!.open();
    const backend = await embeddedWithUsers(opened.store);
    const failing = { ...backend, recs: { ...backend.recs, recommend: () => Promise.reject(new TypeError('secret internals')) } };
    const lines: { level: number; msg: string; err?: { message: string } }[] = [];
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
    });
    const gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0' }),
      backend: failing,
      log: createLogger({ level: 'info', destination }),
    });
    try {
      const url = await gateway.listen(0, '127.0.0.1');
      const created = await fetch(`${url}/api/v1/apikey`, {
        method: 'POST',
        headers: { authorization: basicAuthorization('alice', 'alice-password'), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'logger-test' }),
      });
      const { key } = (await created.json()) as { key: string };
      const response = await fetch(`${url}/v1/nbp?itemId=31000005&apiKey=${encodeURIComponent(key)}`);
      expect(response.status).toBe(500);
      expect(await response.text()).not.toContain('secret internals');
      const logged = lines.filter((line) => line.level >= 50);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ msg: 'recommendations request failed', err: { message: 'secret internals' } });
    } finally {
      await gateway.stop();
      await opened.dispose();
    }
  });
});
