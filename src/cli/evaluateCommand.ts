import { createReadStream } from 'node:fs';
import { parseExperiment } from '../model/experiment.js';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Catalog, EventLog } from '../recommender/index.js';
import { parseArgs } from 'node:util';
import { argsProblem, usageProblem } from './commandArgs.js';
import { DEFAULT_EVENTS_MAX_AGE_DAYS } from '../config/defaults.js';
import { nothingUsable, nothingUsableLine, readEvents } from './importEvents.js';
import { DEFAULT_METHODS, METHODS, evaluate, formatGrid, formatTable } from './evaluate.js';
import type { Method } from './evaluate.js';
import { evaluateShoppers, formatShopperTable } from './shopperTask.js';
import { FORMAT_HELP, formatFromArgs, formatOptions } from './eventFormatArgs.js';
import type { CommandIo } from './importCommand.js';
import { systemReason } from '../backends/embedded/dataFiles.js';

export const EVALUATE_HELP = `Usage:
  recs-gateway evaluate --events <file> --format <format> [--events <file> --format <format> ...]
                        [--views <file>] [--purchases <file>] [--test-fraction 0.2]
                        [--weighting ${DEFAULT_METHODS.join(',')}] [--grid]
                        [--max-age-days ${DEFAULT_EVENTS_MAX_AGE_DAYS}] [--experiment <RECS_EXPERIMENT>]
                        [--categories <file.csv> [--category-column category]]
                        [--task anchored|shopper]

Offline evaluation on item ids (no catalogue needed). All files are read into one log; the latest
visits and orders by start time (--test-fraction, default 0.2) are the test split, the latest
of the rest (same fraction) the validation split. Post-browse predicts a visit's next viewed
item from the one before; next-best-product an order's next item from the one before (or from
the user's last purchase).

Always compared: three baselines, each trained on the same split (popularity: the most viewed,
resp. bought; consecutive: the items that came right after the anchor; sequential: sequential
rules, forward pairs weighted 1/distance up to 10 apart), and the shipped default. --weighting
chooses the others (default ${DEFAULT_METHODS.join(', ')}; any of ${METHODS.filter((m) => m !== 'popularity' && m !== 'default').join(', ')};
damped is short for model): count is item-set co-occurrence; cosine, lift and pmi have their
shrinkage s chosen on validation; model has every parameter of the default chosen there
(d popularity discount, k prior, w window, b backward weight, p distance exponent, rep repeats
collapsed, h half-life in days). Prints per task and method the parameters, their validation
NDCG@10, and test HR@10, NDCG@10 and MRR@10 with standard errors, catalogue coverage, the mean
popularity of what is recommended relative to the mean item (1 = neutral) and, with categories,
the share of items of the anchor's category. --grid also prints every parameter setting tried.

--categories F gives the items categories, as a catalogue would when serving: a CSV file with a
header, the item id in its first column and the category in --category-column (default
category), e.g. Instacart's products.csv with --category-column aisle_id. The model then uses
them as it does when serving (next-best-product fills from the categories bought with the
anchor's and halves its own; post-browse favours it), only items of the file are recommended,
and the table gives the share of same-category items.

--max-age-days N leaves out of every training part the events older than N days before its
newest event, as a gateway does with RECS_EVENTS_MAX_AGE_DAYS (default ${DEFAULT_EVENTS_MAX_AGE_DAYS}, the same as the
server's, so that the figures are those of the model it serves); 0 keeps every event.

--task shopper evaluates recommendedForYou instead (docs/recommender-lists.md): the latest sessions
(--test-fraction; a session id, else a user's events split at 30 minutes idle, else an order)
are held out, and at every step of one whose item the session has not had yet, the list made
from the steps before it must hold that item. Compared: popularity, sequential rules on the last
item (SR), V-SKNN (Ludewig & Jannach 2018: the 500 most recent sessions sharing an item, the 100
most similar by the session's items weighted by position, linear decay) and recommendedForYou's
function, with HR@10 and MRR@10 and standard errors, and HR@10 on the validation split. Every
method leaves out the session's items and fills with popular items.
--experiment E adds the row variant-b: the shipped default's lists in the order variant B of
RECS_EXPERIMENT=E serves them (docs/attribution.md), to compare before running it on shoppers.

--views F and --purchases F are short for --events F --format diginetica-views (resp.
diginetica-purchases). Each --events takes the --format given after it, or the last one given.

${FORMAT_HELP}
`;

/** `evaluate`: prints the table to stdout; returns the exit code (0 done, 1 failed, 2 usage). */
export async function runEvaluate(argv: string[], io: Pick<CommandIo, 'stdout' | 'stderr'>): Promise<number> {
  const out = (line: string): void => void io.stdout.write(`${line}\n`);
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, strict: true, tokens: true,
      options: {
        ...formatOptions,
        events: { type: 'string', multiple: true },
        views: { type: 'string', multiple: true },
        purchases: { type: 'string', multiple: true },
        'test-fraction': { type: 'string' },
        weighting: { type: 'string' },
        grid: { type: 'boolean' },
        categories: { type: 'string' },
        'category-column': { type: 'string' },
        'max-age-days': { type: 'string' },
        task: { type: 'string' },
        experiment: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    err(argsProblem(error, 'evaluate') ?? (error as Error).message);
    return 2;
  }
  const { values, tokens } = parsed;
  if (values.help === true) {
    out(EVALUATE_HELP);
    return 0;
  }
  // pair each --events with the --format after it (else the last before it)
  const inputs: { file: string; format: string }[] = [];
  let pendingFormat: string | undefined;
  const waiting: string[] = [];
  for (const token of tokens) {
    if (token.kind !== 'option' || token.value === undefined) continue;
    if (token.name === 'events') waiting.push(token.value);
    else if (token.name === 'views') inputs.push({ file: token.value, format: 'diginetica-views' });
    else if (token.name === 'purchases') inputs.push({ file: token.value, format: 'diginetica-purchases' });
    else if (token.name === 'format') {
      pendingFormat = token.value;
      for (const file of waiting.splice(0)) inputs.push({ file, format: token.value });
    }
  }
  if (waiting.length > 0) {
    if (pendingFormat === undefined) {
      err(usageProblem(`--events ${waiting[0]} needs a --format`, 'evaluate'));
      return 2;
    }
    for (const file of waiting) inputs.push({ file, format: pendingFormat });
  }
  if (inputs.length === 0) {
    err(usageProblem('no event files given: name them with --events <file> --format <format>, or --views and --purchases', 'evaluate'));
    return 2;
  }
  const fraction = values['test-fraction'] === undefined ? 0.2 : Number(values['test-fraction']);
  if (!(fraction > 0 && fraction < 1)) {
    err('--test-fraction must be between 0 and 1');
    return 2;
  }
  const maxAgeDays = values['max-age-days'] === undefined ? DEFAULT_EVENTS_MAX_AGE_DAYS : Number(values['max-age-days']);
  if (!(Number.isInteger(maxAgeDays) && maxAgeDays >= 0)) {
    err('--max-age-days must be a whole number of days, 0 for none');
    return 2;
  }
  const task = values.task ?? 'anchored';
  if (task !== 'anchored' && task !== 'shopper') {
    err('--task must be anchored or shopper');
    return 2;
  }
  const names = values.weighting === undefined ? DEFAULT_METHODS : values.weighting.split(',').map((w) => (w.trim() === 'damped' ? 'model' : w.trim()));
  const unknown = names.filter((w) => !(METHODS as readonly string[]).includes(w));
  if (unknown.length > 0) {
    err(`unknown weighting ${unknown.join(', ')}: one of ${METHODS.join(', ')}, damped`);
    return 2;
  }

  const log = new EventLog();
  for (const input of inputs) {
    let format;
    try {
      format = formatFromArgs({ ...values, format: input.format });
    } catch (error) {
      err((error as Error).message);
      return 2;
    }
    const path = resolve(input.file);
    let report;
    try {
      report = await readEvents(path, format, (e) => log.add(e), { onProgress: (lines) => err(`  ${path}: ${lines.toLocaleString('en-US')} lines`) });
    } catch (error) {
      err(`recs-gateway: cannot read ${path}: ${systemReason(error)}`);
      return 1;
    }
    for (const s of report.skipped) err(`${path}:${s.line}: skipped: ${s.reason}`);
    // as import does: a file in another format is a mistake to fix, not an empty table to read
    if (nothingUsable(report)) {
      err(`recs-gateway: ${nothingUsableLine(path, format, report)}; fix the file or its --format`);
      return 1;
    }
    err(`${path} (${input.format}): ${report.events} events, ${report.ignored} ignored, ${report.malformed} malformed`);
  }
  let catalog: Catalog | null = null;
  if (values.categories !== undefined) {
    const path = resolve(values.categories);
    try {
      catalog = await readCategories(path, values['category-column'] ?? 'category');
    } catch (error) {
      err(`recs-gateway: cannot read ${path}: ${systemReason(error)}`);
      return 1;
    }
    err(`${path}: ${catalog.size} items with a category`);
  }
  const experiment = values.experiment === undefined ? null : parseExperiment(values.experiment);
  if (typeof experiment === 'string') {
    err(experiment.replace(/^RECS_EXPERIMENT/, '--experiment'));
    return 2;
  }
  const t0 = performance.now();
  if (task === 'shopper') {
    const shoppers = evaluateShoppers(log, { testFraction: fraction, model: { maxAgeDays }, forYouVariants: [{ decay: 0 }, { normalise: false }] });
    out(`train ${shoppers.trainEvents} events, test ${shoppers.testSessions} sessions (latest ${Math.round(fraction * 100)}%)${maxAgeDays > 0 ? `, trained on the events at most ${maxAgeDays} days older than the newest` : ''}`);
    out(formatShopperTable(shoppers.rows));
    err(`evaluated in ${Math.round(performance.now() - t0)} ms`);
    return 0;
  }
  const result = evaluate(log, { testFraction: fraction, methods: names as Method[], catalog, model: { maxAgeDays }, experiment });
  out(`train ${result.trainEvents} events over ${result.trainItems} items, test ${result.testEvents} events (latest ${Math.round(fraction * 100)}% of visits and orders); validation ${result.validationEvents} events (the latest ${Math.round(fraction * 100)}% of the training part)`);
  out(maxAgeDays > 0 ? `trained on the events at most ${maxAgeDays} days older than the newest of each training part (--max-age-days): ${result.trainEventsUsed} of the ${result.trainEvents} before the test split` : 'trained on every event (--max-age-days 0)');
  out(formatTable(result.rows));
  if (values.grid === true) out(`\nvalidation grid\n${formatGrid(result.grid)}`);
  err(`evaluated in ${Math.round(performance.now() - t0)} ms`);
  return 0;
}

/** Splits a CSV line, honouring double quotes (product names hold commas). */
function csvFields(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      fields.push(field);
      field = '';
    } else field += ch;
  }
  fields.push(field);
  return fields;
}

/** Item id (first column) to category (the named column) as a catalogue; lines without either are skipped. */
async function readCategories(path: string, column: string): Promise<Catalog> {
  const catalog = new Catalog();
  let at = -1;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    const fields = csvFields(line);
    if (at < 0) {
      at = fields.indexOf(column);
      if (at < 0) throw new Error(`no column ${JSON.stringify(column)} in the header (${fields.join(', ')})`);
      continue;
    }
    const itemId = Number(fields[0]);
    const category = fields[at];
    if (!Number.isSafeInteger(itemId) || itemId <= 0 || category === undefined || category === '') continue;
    catalog.addRecord({ itemId, name: `item ${itemId}`, categoryPath: `${column} ${category}` }, 0, { loaded: 0, skipped: [] });
  }
  return catalog;
}

// runnable on its own: it needs no configuration
