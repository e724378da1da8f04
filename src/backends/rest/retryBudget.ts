/**
 * Caps retries as a share of traffic, so that retries cannot multiply the load on an upstream
 * that is already failing. Every first attempt deposits `ratio` of a token, every retry withdraws
 * one; the balance never exceeds `reserve`. Hence over any period, retries <= reserve + ratio x
 * requests: a 503 storm of N requests costs the upstream at most 1.1 N + 3 calls with the defaults.
 */
export class RetryBudget {
  private balance: number;

  constructor(
    private readonly ratio: number,
    private readonly reserve: number,
  ) {
    this.balance = reserve;
  }

  deposit(): void {
    this.balance = Math.min(this.reserve, this.balance + this.ratio);
  }

  tryWithdraw(): boolean {
    if (this.balance < 1) return false;
    this.balance -= 1;
    return true;
  }
}
