/** GGML tensor types as numbered in GGUF, with their block geometry. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
}

/** Elements per block and bytes per block, for types whose size we know. */
export const BLOCK_GEOMETRY: Partial<Record<GgmlType, { elements: number; bytes: number }>> = {
  [GgmlType.F32]: { elements: 1, bytes: 4 },
  [GgmlType.F16]: { elements: 1, bytes: 2 },
  [GgmlType.BF16]: { elements: 1, bytes: 2 },
  [GgmlType.Q4_0]: { elements: 32, bytes: 18 },
  [GgmlType.Q4_1]: { elements: 32, bytes: 20 },
  [GgmlType.Q5_0]: { elements: 32, bytes: 22 },
  [GgmlType.Q5_1]: { elements: 32, bytes: 24 },
  [GgmlType.Q8_0]: { elements: 32, bytes: 34 },
  [GgmlType.Q8_1]: { elements: 32, bytes: 36 },
  [GgmlType.Q2_K]: { elements: 256, bytes: 84 },
  [GgmlType.Q3_K]: { elements: 256, bytes: 110 },
  [GgmlType.Q4_K]: { elements: 256, bytes: 144 },
  [GgmlType.Q5_K]: { elements: 256, bytes: 176 },
  [GgmlType.Q6_K]: { elements: 256, bytes: 210 },
  [GgmlType.Q8_K]: { elements: 256, bytes: 292 },
  [GgmlType.IQ4_NL]: { elements: 32, bytes: 18 },
  [GgmlType.I8]: { elements: 1, bytes: 1 },
  [GgmlType.I16]: { elements: 1, bytes: 2 },
  [GgmlType.I32]: { elements: 1, bytes: 4 },
  [GgmlType.I64]: { elements: 1, bytes: 8 },
  [GgmlType.F64]: { elements: 1, bytes: 8 },
};

/** The tensor types the engine can compute with (packed on the GPU, decoded in kernels). */
export const SUPPORTED_TYPES: readonly GgmlType[] = [GgmlType.F32, GgmlType.F16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K];

export function typeName(t: number): string {
  return GgmlType[t] ?? `unknown type ${t}`;
}

export function tensorByteSize(type: GgmlType, elements: number): number {
  const g = BLOCK_GEOMETRY[type];
  if (!g) throw new Error(`tensor type ${typeName(type)} has no known block size`);
  if (elements % g.elements !== 0) throw new Error(`${elements} elements is not a whole number of ${typeName(type)} blocks (${g.elements})`);
  return (elements / g.elements) * g.bytes;
}
