import pg from 'pg';

/** How often a standby asks for the learner lock. */
export const LOCK_RETRY_MS = 1000;

/** The one active learner of a store: a session-level advisory lock held on a connection of its own, so
 * that the holder's death (its connection dropped) frees it at once; standbys ask every LOCK_RETRY_MS. */
export class LearnerLock {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** The backend pid of the session holding the lock, or null while standing by. */
  holderPid: number | null = null;

  constructor(
    private readonly options: { connectionString: string; lockKey: string; retryMs?: number },
    private readonly events: { acquired: (pid: number) => void; lost: () => void; say: (line: string) => void },
  ) {}

  start(): void {
    void this.attempt();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.attempt(), this.options.retryMs ?? LOCK_RETRY_MS);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    if (this.closed) return;
    try {
      if (this.client === null) {
        const client = new pg.Client({ connectionString: this.options.connectionString, keepAlive: true });
        client.on('error', () => this.drop(client));
        client.on('end', () => this.drop(client));
        await client.connect();
        this.client = client;
      }
      const { rows } = await this.client.query<{ got: boolean; pid: number }>('SELECT pg_try_advisory_lock($1::bigint) AS got, pg_backend_pid() AS pid', [this.options.lockKey]);
      if (rows[0]!.got && !this.closed) {
        this.holderPid = rows[0]!.pid;
        this.events.acquired(this.holderPid);
        return;
      }
    } catch (error) {
      this.events.say(`learner: cannot ask for the learner lock: ${(error as Error).message}`);
      if (this.client !== null) this.drop(this.client);
    }
    this.schedule();
  }

  /** The lock's connection is gone: so is the lock. Stand by again. */
  private drop(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    void client.end().catch(() => undefined);
    // an attempt under way schedules the next itself
    if (this.holderPid !== null) {
      this.holderPid = null;
      this.events.lost();
      this.schedule();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    this.holderPid = null;
    await client?.end().catch(() => undefined);
  }
}
