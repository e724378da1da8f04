import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { LARGE_BODIES_IN_FLIGHT_BYTES } from '../../src/config/defaults.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

// Bodies past BODY_LIMIT_BYTES (an administrator's batches; in REST mode any signed-in caller's,
// whose rights only the upstream knows) are held LARGE_BODIES_IN_FLIGHT_BYTES at most, all
// requests together: a probe's forty 8 MiB uploads at once took a REST-mode gateway to 1.2 GB.
// Uploads that declare 8 MiB and then hold still stand in for slow ones; the next large one gets
// 429 with Retry-After before a byte of it is read, and is admitted again once they are gone.

const root = basicAuthorization('root', 'root-password');
const EIGHT_MIB = 8 * 1024 * 1024;
const sqlite = storeKinds.find((kind) => kind.name === 'sqlite')!;

let gw: TestGateway;
let dispose: () => Promise<void>;
beforeAll(async () => {
  const opened = await sqlite.open();
  dispose = opened.dispose;
  gw = await startTestGateway(await embeddedWithUsers(opened.store));
}, 30_000);
afterAll(async () => {
  await gw?.stop();
  await dispose?.();
});

/** A POST that declares `length` bytes and sends a few: it holds its share until the socket goes. */
function holdUpload(path: string, length: number): Promise<Socket> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: ${root}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n[`);
      resolve(socket);
    });
    socket.on('error', () => undefined); // closed by the test or refused: either is fine here
    socket.once('error', reject);
  });
}

async function largePost(path: string): Promise<{ status: number; retryAfter: string | null }> {
  const response = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: root, 'content-type': 'application/json' },
    body: `[${' '.repeat(2 * 1024 * 1024)}]`, // past BODY_LIMIT_BYTES (1 MiB), within the administrators' 8 MiB
  });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: response.headers.get('retry-after') };
}

describe('large bodies read at once', () => {
  it('are bounded all requests together: past the bound 429 before reading, admitted again once the others are gone', async () => {
    const held: Socket[] = [];
    try {
      for (let i = 0; i < LARGE_BODIES_IN_FLIGHT_BYTES / EIGHT_MIB; i++) held.push(await holdUpload(i % 2 === 0 ? '/v1/events' : '/graphql', EIGHT_MIB));
      // the held uploads are admitted once authenticated: asked until the bound shows (at most 10 s)
      let refused = await largePost('/v1/events');
      for (let waited = 0; refused.status !== 429 && waited < 10_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        refused = await largePost('/v1/events');
      }
      expect(refused).toEqual({ status: 429, retryAfter: '1' });
    } finally {
      for (const socket of held) socket.destroy();
    }
    // the shares come back with the closed connections: asked until admitted (at most 10 s)
    let admitted = await largePost('/v1/events');
    for (let waited = 0; admitted.status === 429 && waited < 10_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      admitted = await largePost('/v1/events');
    }
    expect(admitted.status).toBe(200); // read and taken: an empty batch, padded past BODY_LIMIT_BYTES
  }, 60_000);
});
