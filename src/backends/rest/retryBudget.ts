/** Caps retries as a share of traffic, so that retries cannot multiply the load on a failing
 * upstream: a first attempt deposits `ratio` of a token, a retry withdraws one, at most `reserve`. */
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
