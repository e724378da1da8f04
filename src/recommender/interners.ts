/** Item ids (up to 2^53) to dense indexes 0..n-1, so that the model can use typed arrays. */
export class ItemIndex {
  private readonly byId = new Map<number, number>();
  private idsArray = new Float64Array(1024);

  get size(): number {
    return this.byId.size;
  }

  /** An index holding `ids` at indexes 0..n-1 (a model built elsewhere). */
  static fromIds(ids: Float64Array): ItemIndex {
    const index = new ItemIndex();
    index.idsArray = new Float64Array(Math.max(1024, ids.length));
    index.idsArray.set(ids);
    for (let i = 0; i < ids.length; i++) index.byId.set(ids[i]!, i);
    return index;
  }

  /** The ids by index, 0..size-1 (a copy). */
  ids(): Float64Array {
    return this.idsArray.slice(0, this.byId.size);
  }

  /** The dense index of an id, adding it when new. */
  intern(id: number): number {
    let index = this.byId.get(id);
    if (index === undefined) {
      index = this.byId.size;
      if (index === this.idsArray.length) {
        const grown = new Float64Array(this.idsArray.length * 2);
        grown.set(this.idsArray);
        this.idsArray = grown;
      }
      this.idsArray[index] = id;
      this.byId.set(id, index);
    }
    return index;
  }

  /** The dense index of an id, or -1. */
  indexOf(id: number): number {
    return this.byId.get(id) ?? -1;
  }

  idAt(index: number): number {
    return this.idsArray[index]!;
  }

  /** The ids by index, not copied: valid (and read-only) until the next intern of a new id. */
  idsNow(): Float64Array {
    return this.idsArray;
  }
}

/** Strings to small integers, for session, user and order keys. */
export class KeyInterner {
  private map = new Map<string, number>();
  private byId: string[] = [];
  intern(name: string): number {
    let id = this.map.get(name);
    if (id === undefined) {
      id = this.byId.length;
      this.map.set(name, id);
      this.byId.push(name);
    }
    return id;
  }
  get size(): number {
    return this.byId.length;
  }
  /** The names by id, 0..size-1. */
  names(): string[] {
    return this.byId.slice();
  }
  /** The name of an id below size. */
  nameOf(id: number): string {
    return this.byId[id]!;
  }
  /** Moves to the names of `byId` (EventLog.finishCompact), at their indexes. */
  replace(byId: string[], map: Map<string, number>): void {
    this.byId = byId;
    this.map = map;
  }

  /** An interner holding `names` at ids 0..n-1 (a log built in another thread). */
  static of(names: readonly string[]): KeyInterner {
    const interner = new KeyInterner();
    for (const name of names) interner.intern(name);
    return interner;
  }
}
