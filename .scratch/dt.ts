import { toItemRecord, DECIMAL_TEXT } from '../src/ports/itemRecord.ts';
for (const v of [4.627, 0, 5, 1e-7, 1.5e-8, 1e-27, 0.000001, 0.0000012345, 3]) {
  const t = toItemRecord({ itemId: 1, attributes: [], customerRating: v } as never).customerRating as string;
  console.log(v, t, DECIMAL_TEXT.test(t), Number(t) === v);
}
