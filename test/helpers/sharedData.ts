import path from 'node:path';

/**
 * The real data sets of ../shared/data (see its SOURCES.md), read by path and never copied into
 * the project. SHARED_DATA_DIR points elsewhere.
 */
export const SHARED_DATA_DIR =
  process.env.SHARED_DATA_DIR ?? path.resolve(new URL('../../', import.meta.url).pathname, '../shared/data');

export const sharedData = (file: string): string => path.join(SHARED_DATA_DIR, file);
