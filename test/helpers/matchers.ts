import { expect } from 'vitest';

/**
 * vitest's asymmetric matchers, typed `unknown` where vitest says `any`, so that an expected
 * value built from them stays type-checked (the lint refuses an `any` inside an object literal).
 * Each is the very matcher vitest makes.
 */
export const match = {
  any: (type: unknown): unknown => expect.any(type),
  anything: (): unknown => expect.anything(),
  closeTo: (value: number, digits?: number): unknown => expect.closeTo(value, digits),
  objectContaining: (object: Record<string, unknown>): unknown => expect.objectContaining(object),
  stringContaining: (text: string): unknown => expect.stringContaining(text),
  stringMatching: (pattern: string | RegExp): unknown => expect.stringMatching(pattern),
};
