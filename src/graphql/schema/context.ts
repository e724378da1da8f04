import { DEFAULT_MAX_RESPONSE_BYTES } from '../../config/defaults.js';
import type { Backend, PrincipalModel } from '../../ports/backend.js';
import { newResolved, type Resolved } from '../pipeline/apollo.js';
import { AnswerBudget } from './answerBudget.js';
import type { Loaders } from './loaders.js';
import { untracked, type RequestTracking } from '../../observability/attribution.js';
import type { RequestRecord } from '../../observability/requestScope.js';

export interface GatewayContext {
  principal: PrincipalModel | null;
  backend: Backend;
  loaders: Loaders;
  request?: RequestRecord;
  signal: AbortSignal;
  /** The trusted caller address, for calls that forward it (X-Forwarded-For). */
  clientAddress?: string;
  answerBudget: AnswerBudget;
  resolved: Resolved;
  /** The request's variant, and the lists it serves (an impression each). */
  tracking: RequestTracking;
}

/** A class rather than a literal with a `signal` getter, which is slower to make and lands in the old generation. */
export class RequestContext implements GatewayContext {
  readonly answerBudget: AnswerBudget;
  readonly resolved = newResolved();

  constructor(
    readonly principal: PrincipalModel | null,
    readonly backend: Backend,
    readonly loaders: Loaders,
    private readonly deadline: { readonly signal: AbortSignal },
    readonly request?: RequestRecord,
    readonly clientAddress?: string,
    maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES,
    readonly tracking: RequestTracking = untracked(),
  ) {
    this.answerBudget = new AnswerBudget(maxResponseBytes);
  }

  get signal(): AbortSignal {
    return this.deadline.signal;
  }
}
