/* A field a REST body does not have, refused naming it and the field it likely misspells: dropped
 * silently, a misspelling lost what it carried (an event's eventId, a key's name). */

/** The longest part of a field's name a refusal echoes. */
const MAX_ECHOED_NAME = 40;

/** Edits (insertions, deletions, substitutions, and swaps of two neighbours, the commonest slip:
 * `nmae`) from `a` to `b`, ignoring case: a misspelling's distance (optimal string alignment). */
function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let before: number[] = [];
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) next[j] = Math.min(next[j]!, before[j - 2]! + 1);
    }
    before = row;
    row = next;
  }
  return row[y.length]!;
}

/** The one of `fields` that `name` most likely misspells (at most 40% of its length edited, case aside), or undefined. */
function closestField(name: string, fields: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(name.length * 0.4));
  for (const field of fields) {
    const distance = editDistance(name, field);
    if (distance <= bestDistance && (best === undefined || distance < bestDistance)) {
      best = field;
      bestDistance = distance;
    }
  }
  return best;
}

/** The refusal of a field `name` that is none of `fields`, naming it (cut at 40 characters) and the one it likely misspells. */
export function unknownField(name: string, fields: readonly string[], has: string): { field: string; message: string } {
  const shown = name.length > MAX_ECHOED_NAME ? `${name.slice(0, MAX_ECHOED_NAME)}…` : name;
  const suggestion = name.length > MAX_ECHOED_NAME ? undefined : closestField(name, fields);
  const hint = suggestion === undefined ? '' : `; did you mean ${suggestion}?`;
  return { field: shown, message: `unknown field: ${has}${hint}` };
}
