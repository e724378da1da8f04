import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimeProblem, parseIsoTime } from '../../src/model/ingest.js';
import { propertyRuns } from '../helpers/runs.js';

// The hand-written reader of event times (GraphQL's DateTime, POST /v1/events) against the one it
// replaced: a regular expression, a check of days through Date.UTC, then Date.parse. Of the texts
// with an offset it must take exactly those that took, and give the same instant, but where the
// old one was wrong (its comment): Date.parse's legacy parser, which had the texts with a space
// and those with a month past 12, read years 0000-0099 as two-digit years, or as month-day-year
// (0012-01-01 00:00 was 2001-12-01), or refused them. A text without an offset (a date alone, or
// a time without Z or ±hh:mm), which the old one took as UTC or local time, is refused.
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function before(text: string): number | null {
  const match = ISO_8601.exec(text);
  if (match === null) return null;
  const [, year, month, day, hour = '0', minute = '0'] = match;
  if (new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDate() !== Number(day) || Number(hour) > 23 || Number(minute) > 59) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** Whether a text ends in an offset as the old reader's expression had it. */
const hasOffset = (text: string): boolean => text.length > 10 && /(Z|[+-]\d{2}:?\d{2})$/.test(text);

/** The text with a small t (as the separator) and z (at the end) in capitals, or null when it has neither. */
function capitalised(text: string): string | null {
  if (text.length <= 10) return null;
  const t = text[10] === 't' ? `${text.slice(0, 10)}T${text.slice(11)}` : text;
  const z = t.endsWith('z') ? `${t.slice(0, -1)}Z` : t;
  return z === text ? null : z;
}

function agrees(text: string): void {
  const now = parseIsoTime(text);
  // RFC 3339 takes t and z for T and Z, which the old reader's expression refused: read alike
  const capitals = capitalised(text);
  if (capitals !== null) {
    expect(now, text).toBe(parseIsoTime(capitals));
    return;
  }
  if (!hasOffset(text)) {
    expect(now, text).toBeNull();
    return;
  }
  if (ISO_8601.test(text)) {
    const month = Number(text.slice(5, 7));
    if (month < 1 || month > 12) {
      expect(now, text).toBeNull();
      return;
    }
    if (text[10] === ' ' && text.startsWith('00')) {
      // the years they say: before 1970, so no event is kept with one (checkEvents)
      if (now !== null) expect(now, text).toBeLessThan(Date.UTC(1970, 0, 1));
      return;
    }
  }
  const was = before(text);
  expect(now === null, text).toBe(was === null);
  if (was === null || now === null) return;
  expect(now, text).toBe(was);
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');
/** Two digits, mostly in range, sometimes just past it or anything. */
const twoDigits = (low: number, high: number) =>
  fc.oneof({ weight: 4, arbitrary: fc.integer({ min: low, max: high }) }, fc.constantFrom(0, high + 1, 60, 99), fc.integer({ min: 0, max: 99 })).map((n) => pad(n, 2));
const year = fc.oneof(fc.integer({ min: 1900, max: 2100 }), fc.constantFrom(0, 4, 49, 50, 99, 100, 400, 1900, 2000, 9999), fc.integer({ min: 0, max: 9999 })).map((n) => pad(n, 4));
const fraction = fc.oneof(fc.constant(''), fc.stringMatching(/^\.\d{1,10}$/), fc.constant('.'));
const zone = fc.oneof(
  fc.constant(''),
  fc.constant('Z'),
  fc.tuple(fc.constantFrom('+', '-'), twoDigits(0, 23), fc.constantFrom(':', ''), twoDigits(0, 59)).map((parts) => parts.join('')),
  fc.constantFrom('z', '+1', '+01', '+01:', '+01:0', 'ZZ', 'Z ', '+01:000', ' '),
);
/** Texts of the shape the reader takes, with every part now and then wrong. */
const isoLike = fc
  .tuple(
    year,
    twoDigits(1, 12),
    twoDigits(1, 31),
    fc.constantFrom('T', ' ', 't', '_', ''),
    twoDigits(0, 23),
    twoDigits(0, 59),
    fc.option(twoDigits(0, 59), { nil: undefined }),
    fraction,
    zone,
    fc.constantFrom('date', 'minutes', 'full'),
  )
  .map(([y, mo, d, sep, h, mi, s, frac, z, form]) => {
    if (form === 'date') return `${y}-${mo}-${d}`;
    const time = `${y}-${mo}-${d}${sep}${h}:${mi}`;
    return form === 'minutes' || s === undefined ? `${time}${z}` : `${time}:${s}${frac}${z}`;
  });

describe('parseIsoTime', () => {
  it('takes what the regular expression and Date.parse took with an offset, giving the same instant, and nothing without one', () => {
    fc.assert(fc.property(isoLike, (text) => agrees(text)), { numRuns: propertyRuns(5_000, 50_000) });
  });

  it('refuses what is not of that shape, as the old reader did', () => {
    const mutated = fc.tuple(isoLike, fc.nat(30), fc.string({ maxLength: 3 })).map(([text, at, insert]) => text.slice(0, at) + insert + text.slice(at + 1));
    fc.assert(fc.property(fc.oneof(mutated, fc.string({ maxLength: 40 }), fc.string({ unit: fc.constantFrom(...'0123456789-:T+Z. '), maxLength: 35 })), (text) => agrees(text)), {
      numRuns: propertyRuns(5_000, 50_000),
    });
  });

  it.each([
    ['2026-11-23T00:00Z', Date.UTC(2026, 10, 23)],
    ['2026-11-23T06:40:00Z', Date.UTC(2026, 10, 23, 6, 40)],
    ['2026-11-23 06:40:00.5+01:00', Date.UTC(2026, 10, 23, 5, 40, 0, 500)],
    ['2026-11-23T06:40:59.123456789-0130', Date.UTC(2026, 10, 23, 8, 10, 59, 123)],
    // RFC 3339 (5.6): T and Z may be written t and z
    ['2026-11-23t06:40:00z', Date.UTC(2026, 10, 23, 6, 40)],
    ['2026-11-23t07:40:00+01:00', Date.UTC(2026, 10, 23, 6, 40)],
    ['2026-11-23 06:40z', Date.UTC(2026, 10, 23, 6, 40)],
    ['2026-11-23t10:00:00', null],
    ['2026-11-23t06:40:00+24:00', null],
    ['2024-02-29T00:00Z', Date.UTC(2024, 1, 29)],
    ['0400-02-29T00:00Z', Date.UTC(2000, 1, 29) - 1600 * 365.2425 * 86_400_000],
    // without an offset: RFC 3339 (and graphql-scalars' DateTime) refuse them, rather than guess UTC
    ['2026-11-23', null],
    ['2026-11-23T10:00:00', null],
    ['2026-11-23 06:40', null],
    ['2026-11-23T10:00:00.123', null],
    ['2026-02-29', null],
    ['2026-11-31', null],
    ['2026-13-01', null],
    ['2026-11-23T24:00', null],
    ['2026-11-23T06:40:60Z', null],
    ['2026-11-23T06:40:00+24:00', null],
    ['2026-11-23T06:40:00.0000000001Z', null],
    ['2026-11-23T06:40:00Z ', null],
    ['March 7', null],
    // as the day check through Date.UTC had it: the year 0000 read as 1900, not a leap year
    ['0000-02-29', null],
    // which Date.parse's legacy parser read as 2001-01-13 and 2001-12-01
    ['0001-13-01', null],
    ['0012-01-01 00:00Z', Date.UTC(2012, 0, 1) - 2000 * 365.2425 * 86_400_000],
  ])('reads %s as %s', (text, expected) => {
    expect(parseIsoTime(text)).toBe(expected);
    // a small t or z reads as the capital the old reader took
    const old = capitalised(text) ?? text;
    if (!['0001-13-01', '0012-01-01 00:00Z'].includes(text) && hasOffset(old)) expect(before(old)).toBe(expected);
  });
});

describe('isoTimeProblem: why a time was refused', () => {
  it('names the part out of range or missing, and nothing for a text not in the form', () => {
    expect(isoTimeProblem('2026-04-31T00:00:00Z')).toBe('2026-04 has no day 31 (01 to 30)');
    expect(isoTimeProblem('2026-00-10T00:00:00Z')).toBe('month 00 is out of range (01 to 12)');
    expect(isoTimeProblem('2026-11-23 24:00:00Z')).toBe('hour 24 is out of range (00 to 23)');
    expect(isoTimeProblem('2026-11-23T10:00:61Z')).toBe('second 61 is out of range (00 to 59)');
    expect(isoTimeProblem('2026-11-23T10:00:00.Z')).toBe('a fraction of a second has 1 to 9 digits');
    expect(isoTimeProblem('2026-11-23T10:00:00.1234567890Z')).toBe('a fraction of a second has 1 to 9 digits');
    expect(isoTimeProblem('2026-11-23T10:00:00-0960')).toBe('offset -09:60 is out of range (-23:59 to +23:59)');
    for (const text of ['', 'soon', '2026/11/23', '2026-11-23X10:00Z', '2026-11-23T10:00:00Q', '2026-11-23T10:00:00+1', '2026-11-23T10:00:00Zjunk']) {
      expect(isoTimeProblem(text), text).toBeNull();
    }
  });

  it('never throws, and says nothing of the text but the numbers it read: one of its sentences, digits aside', () => {
    const sentences = new Set([
      'month  is out of range ( to )',
      '- has no day  ( to )',
      'it has no time of day and offset (T::Z)',
      'hour  is out of range ( to )',
      'minute  is out of range ( to )',
      'second  (a leap second) is not taken: send ',
      'second  is out of range ( to )',
      'a fraction of a second has  to  digits',
      'it has no offset: add Z for UTC or the local offset (+:); without one the instant is not known',
      'offset +: is out of range (-: to +:)',
      'offset -: is out of range (-: to +:)',
    ]);
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.constantFrom('2026-11-23T10:00:00Z', '2026-02-29T24:61:60+25:99'), fc.nat(30), (junk, base, at) => {
        const text = base.slice(0, at) + junk + base.slice(at);
        if (parseIsoTime(text) !== null) return;
        const problem = isoTimeProblem(text);
        if (problem !== null) expect(sentences.has(problem.replace(/[0-9]/g, '')), `${JSON.stringify(text)}: ${problem}`).toBe(true);
      }),
      { numRuns: propertyRuns(500, 2_000) },
    );
    // the counterexample CI found for the test before: "has" in the text, and in the sentence
    expect(isoTimeProblem('2026-02-29hasT24:61:60+25:99')).toBe('2026-02 has no day 29 (01 to 28)');
  });
});
