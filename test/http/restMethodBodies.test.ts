import { describe, expect, it } from 'vitest';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * A method a /v1/ route does not take is answered in the recommendations interface's own error
 * body (`{"errors":[{"code":405,...}]}`), as every other /v1/ route answers it, /v1/stats included.
 */
describe('a wrong method on the /v1/ routes', () => {
  const gw = useEmbeddedGateway(storeKinds.find((k) => k.name === 'sqlite')!);

  it.each(['/v1/trending', '/v1/foryou', '/v1/events', '/v1/stats'])('%s answers 405 in the REST error body', async (path) => {
    const response = await fetch(`${gw.url}${path}`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(await response.json()).toEqual({ errors: [expect.objectContaining({ code: 405 })] });
  });
});
