import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { report } from '../helpers/harness.js';
import { CLOSED_WHILE_SENDING, GOOD, GOOD_QUERY, runHostileMix, startHostileTarget, SUITE_SIZES, type HostileGateway } from './hostile.js';

// The hostile mixes of issue 18 at a tenth of their size or less (npm run test:soak runs them at
// full size, with latency): bounded in requests; what is asserted is what the attacks got, the
// gateway's CPU per hostile request, its memory, and that the well-behaved key was never refused.

let target: HostileGateway;
beforeAll(async () => {
  target = await startHostileTarget();
});
afterAll(async () => {
  await target?.stop();
});

describe('a gateway under a hostile mix', () => {
  it('answers every stranger cheaply, keeps its memory, and never refuses a valid key', async () => {
    const { url } = target.serve;
    const good = async (): Promise<{ status: number; body: string }> => {
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: target.key, 'x-forwarded-for': GOOD },
        body: GOOD_QUERY,
      });
      return { status: response.status, body: await response.text() };
    };
    const expected = await good();
    expect(expected.status).toBe(200);

    let attacking = true;
    const answers: { status: number; body: string }[] = [];
    const mix = runHostileMix(target, SUITE_SIZES).finally(() => (attacking = false));
    while (attacking) answers.push(await good());
    const result = await mix;
    report('hostile mix (suite size)', {
      hostileRequests: result.hostileRequests,
      cpuSeconds: result.cpuSeconds,
      cpuMsPerHostileRequest: (result.cpuSeconds * 1000) / result.hostileRequests,
      rssBeforeMiB: result.rssBeforeMiB,
      rssPeakMiB: result.rssPeakMiB,
      goodRequests: answers.length,
    });

    // what each attack got: the bodies refused unread, the guesses counted before the work
    expect(result.attacks.bigBodies).toEqual({ 413: SUITE_SIZES.bigBodies });
    // anonymous: 413 from the declared length; with a wrong key: 401, or 429 while its address is
    // locked out; either with the connection closed while the megabyte was still being sent
    expect(Object.keys(result.attacks.tokenFloods).filter((s) => !['401', '413', '429', String(CLOSED_WHILE_SENDING)].includes(s))).toEqual([]);
    // ten failures a minute per address: the burst, and one more for every 6 s the mix took
    const allowed = 10 + Math.ceil(result.seconds / 6);
    const { wrongPasswords, randomKeys } = result.attacks;
    expect(wrongPasswords[401]).toBeGreaterThanOrEqual(10);
    expect(wrongPasswords[401]).toBeLessThanOrEqual(allowed);
    expect(wrongPasswords[401]! + wrongPasswords[429]!).toBe(SUITE_SIZES.wrongPasswords);
    expect(randomKeys[401]).toBeGreaterThanOrEqual(10);
    expect(randomKeys[401]).toBeLessThanOrEqual(allowed);
    for (const statuses of Object.values(result.attacks)) {
      expect(statuses[500]).toBeUndefined();
      expect(statuses[0]).toBeUndefined();
    }
    // the well-behaved key: every answer the expected one, throughout
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status !== 200 || a.body !== expected.body)).toEqual([]);
    // and from the address that guessed alice's password, her key still works
    const fromAttacker = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: target.key, 'x-forwarded-for': '10.66.0.4' },
      body: GOOD_QUERY,
    });
    expect(fromAttacker.status).toBe(200);
    // bob, whom nobody attacked, signs in from a fresh address
    const bob = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('bob', 'bob-password'), 'x-forwarded-for': '10.70.0.9' },
      body: JSON.stringify({ query: '{ viewer { username } }' }),
    });
    expect(bob.status).toBe(200);

    // Generous bounds, far from what the findings measured (479 ms of CPU for one 1 MB body;
    // the heap grew by a megabyte a body): the average hostile request costs under 10 ms of CPU,
    // and the process holds under 200 MiB more than before at its peak.
    expect((result.cpuSeconds * 1000) / result.hostileRequests).toBeLessThan(10);
    expect(result.rssPeakMiB - result.rssBeforeMiB).toBeLessThan(200);
  }, 240_000);
});
