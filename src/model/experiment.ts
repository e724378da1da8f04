import { hash } from 'node:crypto';
import type { Variant } from '../ports/attribution.js';
import type { RecommendationEntryModel } from '../ports/backend.js';

export type { Variant } from '../ports/attribution.js';
export const VARIANTS: readonly Variant[] = ['A', 'B'];

/**
 * RECS_EXPERIMENT: `evidence-prior:<k>,share=<s>`. Variant B ranks a list's model entries by
 * score × evidence / (evidence + k), so an item backed by few sessions or orders sinks below steady
 * evidence; the fills keep their places after them. `s` is the share of shoppers in B.
 */
export interface Experiment {
  /** As configured, e.g. `evidence-prior:5,share=0.5`: it seeds the assignment, so a new experiment reshuffles shoppers. */
  readonly name: string;
  /** k of evidence-prior, > 0. */
  readonly evidencePrior: number;
  /** Share of shoppers in B, strictly between 0 and 1. */
  readonly share: number;
}

const SYNTAX = 'evidence-prior:<k>,share=<s> with k a number from 0.01 to 1000 and s a number strictly between 0 and 1, e.g. evidence-prior:5,share=0.5';
const NUMBER = /^\d+(?:\.\d+)?$/;

/** The experiment RECS_EXPERIMENT defines; a string naming what is wrong when it is malformed. */
export function parseExperiment(text: string): Experiment | string {
  const match = /^evidence-prior:([^,]*),share=(.*)$/.exec(text.trim());
  if (!match) return `RECS_EXPERIMENT must be ${SYNTAX}`;
  const [, k, s] = match;
  if (!NUMBER.test(k!) || Number(k) < 0.01 || Number(k) > 1000) return `RECS_EXPERIMENT's k must be a number from 0.01 to 1000, got "${k}"`;
  if (!NUMBER.test(s!) || !(Number(s) > 0 && Number(s) < 1)) return `RECS_EXPERIMENT's share must be a number strictly between 0 and 1, got "${s}"`;
  return { name: `evidence-prior:${Number(k)},share=${Number(s)}`, evidencePrior: Number(k), share: Number(s) };
}

/** The variant of a shopper: a stable hash of the experiment and the shopper's id, under the share
 * in B. Without an experiment, or without a shopper, A: the shipped ranking. */
export function variantOf(experiment: Experiment | null, shopper: string | null | undefined): Variant {
  if (experiment === null || shopper === null || shopper === undefined || shopper === '') return 'A';
  const digest = hash('sha256', `${experiment.name}\n${shopper}`, 'buffer');
  return digest.readUInt32BE(0) / 0x1_0000_0000 < experiment.share ? 'B' : 'A';
}

/** Variant B's order of a list's entries: model entries (with a score) by score × e / (e + k), ties
 * kept in their order, then the fills as they were; ranks renumbered. The entries are not changed. */
export function rerankByEvidence(entries: readonly RecommendationEntryModel[], k: number): RecommendationEntryModel[] {
  const scored: { entry: RecommendationEntryModel; value: number; at: number }[] = [];
  const fills: RecommendationEntryModel[] = [];
  entries.forEach((entry, at) => {
    if (entry.score === null) fills.push(entry);
    else scored.push({ entry, value: entry.score * (entry.evidence / (entry.evidence + k)), at });
  });
  scored.sort((a, b) => b.value - a.value || a.at - b.at);
  const ordered = [...scored.map((s) => s.entry), ...fills];
  return ordered.map((entry, i) => (entry.rank === i + 1 ? entry : { ...entry, rank: i + 1 }));
}
