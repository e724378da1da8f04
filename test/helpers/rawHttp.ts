import { connect } from 'node:net';

/** Sends raw bytes and resolves with what came back before the server closed or `ms` passed. */
export function raw(url: string, bytes: string, ms = 5_000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) setTimeout(done, 50);
    });
    socket.on('end', done);
    socket.on('error', reject);
    socket.write(bytes);
  });
}

/** The status code of a raw HTTP/1.1 answer; 0 when there is none. */
export const statusOf = (head: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
