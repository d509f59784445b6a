/**
 * Int8 subgroup matrices (Dawn's chromium-experimental-subgroup-matrix, tensor cores on NVIDIA) on a
 * device that has them: whether a kernel using them compiles and computes what it should, and how fast a
 * prefill product on them runs. Experimental: the feature needs Dawn's unsafe APIs allowed, and no
 * adapter of the development machine offers it, so this runs in the GPU lab (bench/gpu/lab.ts) only.
 *
 * 1. The builtins' syntax: Dawn changed subgroupMatrixLoad/Store from a `col_major` argument to a
 *    template parameter (`<T, col_major>`, `<row_major>`); each kernel is written with LOAD_LEFT,
 *    LOAD_RIGHT and STORE and expanded in both forms, the first that compiles and multiplies a 16 x 32 by a
 *    32 x 16 int8 matrix exactly (subgroup-matrix-hello.wgsl) wins. On the H200 (Dawn of webgpu 0.6.2):
 *    the template form. Then the units of an int8 load's offset and stride: the proposal counts matrix
 *    elements (bytes), Dawn's SPIR-V writer once counted the i32 words of the array; the hello kernel at
 *    an offset, at another stride, and at both tells which (the tile multiplied garbage at every offset
 *    but 0 in session 20's lease; in session 21's, offset and stride changed together fitted neither).
 * 2. The tile (subgroup-matrix-tile.wgsl): Q8_0-like products of int8 rows with a scale a block of 32
 *    against int8 x, on shapes of a prefill step; sampled outputs checked against float64 sums of the
 *    same integers and scales, then timed (best of several submits, all copies in one pass).
 */
import helloSource from './subgroup-matrix-hello.wgsl?raw';
import tileSource from './subgroup-matrix-tile.wgsl?raw';
import { readWords } from './readback.ts';
import { bestOf, onePass, submitMs } from './timing.ts';
import { xorshift32 } from './xorshift.ts';

export type SubgroupMatrixSyntax = 'template' | 'argument';

export interface SubgroupMatrixShape {
  label: string;
  n: number;
  k: number;
  /** Products of this shape a timed pass runs (the same buffers: a prefill product is compute-bound). */
  copies: number;
}

export interface SubgroupMatrixRate {
  shape: string;
  tokens: number;
  ms: number;
  GFLOPs: number;
  /** Largest |got - want| / max(1, |want|) over the sampled outputs. */
  maxRelError: number;
}

/** What an int8 load's offset or stride counts: bytes (matrix elements, as the proposal says) or the array's i32 words. */
export type OffsetUnit = 'bytes' | 'words';

/** What an int8 load's offset and stride count, as the hello kernel found them. */
export interface LoadUnits {
  offset: OffsetUnit;
  stride: OffsetUnit;
}

export interface SubgroupMatrixProbe {
  syntax?: SubgroupMatrixSyntax;
  /** What an int8 load's offset and stride count (undefined where no reading gave the exact product). */
  units?: LoadUnits;
  /** The hello kernel at an offset, at a stride other than 32, and both: the readings that fit each. */
  offsetOutcome?: string;
  /** Per syntax tried: compiled and exact, or why not. */
  tried: { syntax: SubgroupMatrixSyntax; outcome: string }[];
  tile: SubgroupMatrixRate[];
  errors: string[];
}

/** The index of the parenthesis closing the one at `open`. */
function closing(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === '(') depth++;
    else if (code[i] === ')' && --depth === 0) return i;
  }
  throw new Error(`subgroup-matrix: unbalanced parentheses after ${code.slice(open - 20, open)}`);
}

/** Arguments of a call, split at top-level commas. */
function splitArgs(args: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '(') depth++;
    else if (args[i] === ')') depth--;
    else if (args[i] === ',' && depth === 0) {
      out.push(args.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(args.slice(start).trim());
  return out;
}

const LEFT = 'subgroup_matrix_left<i8, 32, 16>';
const RIGHT = 'subgroup_matrix_right<i8, 16, 32>';

/**
 * `code` with LOAD_LEFT(arr, offset, stride), LOAD_RIGHT(...) and STORE(arr, offset, value, stride)
 * written in `syntax`; where `units` says an int8 load's offset or stride counts words, that argument
 * (given in bytes) is divided by 4.
 */
export function expandSubgroupMatrix(code: string, syntax: SubgroupMatrixSyntax, units: LoadUnits = { offset: 'bytes', stride: 'bytes' }): string {
  const write = (name: string, a: string[]): string => {
    const major = name === 'LOAD_RIGHT' ? 'col_major' : 'row_major';
    if (name === 'STORE') return syntax === 'template' ? `subgroupMatrixStore<row_major>(&${a[0]}, ${a[1]}, ${a[2]}, ${a[3]})` : `subgroupMatrixStore(&${a[0]}, ${a[1]}, ${a[2]}, false, ${a[3]})`;
    const type = name === 'LOAD_LEFT' ? LEFT : RIGHT;
    const offset = units.offset === 'words' ? `(${a[1]}) / 4u` : a[1];
    const stride = units.stride === 'words' ? `(${a[2]}) / 4u` : a[2];
    return syntax === 'template' ? `subgroupMatrixLoad<${type}, ${major}>(&${a[0]}, ${offset}, ${stride})` : `subgroupMatrixLoad<${type}>(&${a[0]}, ${offset}, ${major === 'col_major'}, ${stride})`;
  };
  let out = code;
  for (;;) {
    const m = /\b(LOAD_LEFT|LOAD_RIGHT|STORE)\(/.exec(out);
    if (!m) return out;
    const open = m.index + m[1].length;
    const end = closing(out, open);
    out = out.slice(0, m.index) + write(m[1], splitArgs(out.slice(open + 1, end))) + out.slice(end + 1);
  }
}

/** Random int8 values packed four to a u32, little-endian (element 4 i + j in byte j of word i). */
function randomInt8(count: number, seed: number): Int8Array {
  const next = xorshift32(seed);
  return Int8Array.from({ length: count }, () => (next() % 255) - 127);
}

function randomScales(count: number, seed: number): Float32Array {
  const q = randomInt8(count, seed);
  return Float32Array.from(q, (v) => (Math.abs(v) + 1) / 4096);
}

async function compiles(device: GPUDevice, code: string): Promise<GPUComputePipeline> {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const problems = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
  const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } }).catch((e: Error) => {
    problems.push(e.message);
    return undefined;
  });
  const scope = await device.popErrorScope();
  if (scope) problems.push(scope.message);
  if (problems.length > 0 || !pipeline) throw new Error(problems.join('; ').slice(0, 2000));
  return pipeline;
}

function buffer(device: GPUDevice, data: ArrayBufferView | number, usage = GPUBufferUsage.STORAGE): GPUBuffer {
  const size = typeof data === 'number' ? data : data.byteLength;
  const b = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage: usage | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  if (typeof data !== 'number') device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
  return b;
}

/** Where the hello kernel reads its matrices: offsets and strides in bytes, as the shader is given them. */
export interface HelloPlacement {
  leftOffset: number;
  leftStride: number;
  rightOffset: number;
  rightStride: number;
}

/** The hello kernel's 16 x 16 product with its operands placed as `p` says, read back. */
async function runHello(device: GPUDevice, pipeline: GPUComputePipeline, w: Int8Array, x: Int8Array, p: HelloPlacement): Promise<Int32Array> {
  const out = buffer(device, 256 * 4);
  const params = buffer(device, new Uint32Array([p.leftOffset, p.leftStride, p.rightOffset, p.rightStride]), GPUBufferUsage.UNIFORM);
  const buffers = [buffer(device, w), buffer(device, x), out, params];
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((b, binding) => ({ binding, resource: { buffer: b } })) });
  device.queue.submit([onePass(device, (pass) => { pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(1); })]);
  const got = new Int32Array((await readWords(device, out, 256)).buffer);
  for (const b of buffers) b.destroy();
  return got;
}

/**
 * '' where `got` is the product of the operands as the kernel would read them were its offsets and
 * strides counted in `units` (words: 4 bytes each), else its first wrong values.
 */
function wrongValues(got: Int32Array, w: Int8Array, x: Int8Array, p: HelloPlacement, units: LoadUnits = { offset: 'bytes', stride: 'bytes' }): string {
  const [os, ss] = [units.offset === 'words' ? 4 : 1, units.stride === 'words' ? 4 : 1];
  const wrong: string[] = [];
  for (let r = 0; r < 16; r++) {
    for (let c = 0; c < 16; c++) {
      let want = 0;
      for (let k = 0; k < 32; k++) want += (w[os * p.leftOffset + r * ss * p.leftStride + k] ?? NaN) * (x[os * p.rightOffset + c * ss * p.rightStride + k] ?? NaN);
      if (got[r * 16 + c] !== want && wrong.length < 4) wrong.push(`[${r}][${c}] ${got[r * 16 + c]} for ${want}`);
    }
  }
  return wrong.length ? `wrong values: ${wrong.join(', ')}` : '';
}

/** The hello kernel in `syntax`: '' where it compiled and its 16 x 16 product from offset 0 is exact, else what went wrong. */
async function tryHello(device: GPUDevice, syntax: SubgroupMatrixSyntax): Promise<{ outcome: string; pipeline?: GPUComputePipeline }> {
  const pipeline = await compiles(device, expandSubgroupMatrix(helloSource, syntax));
  const w = randomInt8(16 * 32, 11);
  const x = randomInt8(16 * 32, 12);
  const p = { leftOffset: 0, leftStride: 32, rightOffset: 0, rightStride: 32 };
  const outcome = wrongValues(await runHello(device, pipeline, w, x, p), w, x, p);
  return { outcome, pipeline };
}

const READINGS: LoadUnits[] = (['bytes', 'words'] as const).flatMap((offset) => (['bytes', 'words'] as const).map((stride) => ({ offset, stride })));
const reading = (u: LoadUnits) => `offset in ${u.offset}, stride in ${u.stride}`;

/** The readings of offset and stride under which `got` is the exact product of the operands placed as `p` says. */
export function readingsThatFit(got: Int32Array, w: Int8Array, x: Int8Array, p: HelloPlacement): LoadUnits[] {
  return READINGS.filter((u) => !wrongValues(got, w, x, p, u));
}

/**
 * The hello kernel reading its matrices at offsets (strides 32), at strides of 64 (offsets 0), and both,
 * operands large enough for either counted in words: the readings of offset and stride (bytes or i32
 * words) under which each placement gave the exact product. Session 21's H200 fitted neither reading
 * with both changed at once, so each is changed alone first.
 */
async function loadUnitsOf(device: GPUDevice, pipeline: GPUComputePipeline): Promise<{ units?: LoadUnits; outcome: string }> {
  const placements: { name: string; p: HelloPlacement }[] = [
    { name: 'at offsets 64 and 32', p: { leftOffset: 64, leftStride: 32, rightOffset: 32, rightStride: 32 } },
    { name: 'at strides of 64', p: { leftOffset: 0, leftStride: 64, rightOffset: 0, rightStride: 64 } },
    { name: 'at both', p: { leftOffset: 64, leftStride: 64, rightOffset: 32, rightStride: 64 } },
  ];
  const fits: LoadUnits[][] = [];
  const lines: string[] = [];
  for (const [i, { name, p }] of placements.entries()) {
    const w = randomInt8(4 * p.leftOffset + 16 * 4 * p.leftStride, 13 + i);
    const x = randomInt8(4 * p.rightOffset + 16 * 4 * p.rightStride, 17 + i);
    const got = await runHello(device, pipeline, w, x, p);
    const fit = readingsThatFit(got, w, x, p);
    fits.push(fit);
    lines.push(`${name}: ${fit.length ? fit.map(reading).join(' or ') : `no reading fits (as bytes ${wrongValues(got, w, x, p)})`}`);
  }
  const units = READINGS.find((u) => fits.every((f) => f.some((v) => v.offset === u.offset && v.stride === u.stride)));
  return { units, outcome: `${lines.join('; ')}${units ? `: ${reading(units)}` : ''}` };
}

async function measureTile(device: GPUDevice, pipeline: GPUComputePipeline, shape: SubgroupMatrixShape, tokens: number, runs: number): Promise<SubgroupMatrixRate> {
  const { n, k } = shape;
  if (n % 32 || k % 32 || tokens % 32) throw new Error(`subgroup-matrix tile: ${n} x ${k} at ${tokens} tokens is not in whole 32s`);
  const nb = k / 32;
  const w = randomInt8(n * k, 21);
  const dw = randomScales(n * nb, 22);
  const x = randomInt8(tokens * k, 23);
  const dx = randomScales(tokens * nb, 24);
  const y = buffer(device, tokens * n * 4);
  const params = buffer(device, new Uint32Array([n, k, tokens, 0]), GPUBufferUsage.UNIFORM);
  const entries = [buffer(device, w), buffer(device, dw), buffer(device, x), buffer(device, dx), y, params];
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: entries.map((b, binding) => ({ binding, resource: { buffer: b } })) });
  const pass = (copies: number) => onePass(device, (p) => {
    p.setPipeline(pipeline);
    p.setBindGroup(0, group);
    for (let i = 0; i < copies; i++) p.dispatchWorkgroups(n / 32, tokens / 32);
  });
  device.pushErrorScope('validation');
  await submitMs(device, pass(1));
  const error = await device.popErrorScope();
  if (error) throw new Error(`subgroup-matrix tile ${shape.label}: ${error.message}`);
  const got = new Float32Array((await readWords(device, y, tokens * n)).buffer);
  let maxRelError = 0;
  for (let i = 0; i < 512; i++) {
    const t = (i * 7919) % tokens;
    const row = (i * 104729 + 17) % n;
    let want = 0;
    for (let b = 0; b < nb; b++) {
      let s = 0;
      for (let j = 0; j < 32; j++) s += w[row * k + b * 32 + j] * x[t * k + b * 32 + j];
      want += s * dw[row * nb + b] * dx[t * nb + b];
    }
    maxRelError = Math.max(maxRelError, Math.abs(got[t * n + row] - want) / Math.max(1, Math.abs(want)));
  }
  const ms = await bestOf(runs, () => submitMs(device, pass(shape.copies)));
  for (const b of entries) b.destroy();
  const flop = 2 * n * k * tokens * shape.copies;
  return { shape: shape.label, tokens, ms, GFLOPs: flop / (ms * 1e6), maxRelError };
}

/** Everything above on `device` (which must have been given the subgroup-matrix feature). */
export async function probeSubgroupMatrix(device: GPUDevice, shapes: SubgroupMatrixShape[], tokens: number, log: (line: string) => void, runs = 5): Promise<SubgroupMatrixProbe> {
  const result: SubgroupMatrixProbe = { tried: [], tile: [], errors: [] };
  let hello: GPUComputePipeline | undefined;
  for (const syntax of ['template', 'argument'] as const) {
    const { outcome, pipeline } = await tryHello(device, syntax).catch((e: Error) => ({ outcome: `failed: ${e.message}`, pipeline: undefined }));
    result.tried.push({ syntax, outcome: outcome || 'exact' });
    log(`subgroup matrices, ${syntax} syntax: ${outcome || 'compiled, the 16 x 32 x 16 int8 product exact'}`);
    if (!outcome) {
      result.syntax = syntax;
      hello = pipeline;
      break;
    }
  }
  if (!result.syntax || !hello) return result;
  const found = await loadUnitsOf(device, hello).catch((e: Error) => ({ units: undefined, outcome: `failed: ${e.message}` }));
  result.units = found.units;
  result.offsetOutcome = found.outcome;
  log(`subgroup matrices at offsets and strides: ${found.outcome}`);
  if (!result.units) return result;
  let pipeline: GPUComputePipeline;
  try {
    pipeline = await compiles(device, expandSubgroupMatrix(tileSource, result.syntax, result.units));
  } catch (e) {
    result.errors.push(`tile: ${(e as Error).message}`);
    log(`subgroup-matrix tile failed to build: ${(e as Error).message}`);
    return result;
  }
  for (const shape of shapes) {
    try {
      const rate = await measureTile(device, pipeline, shape, tokens, runs);
      result.tile.push(rate);
      log(`subgroup-matrix tile ${shape.label} x ${shape.copies}, ${tokens} tokens: ${rate.ms.toFixed(3)} ms, ${rate.GFLOPs.toFixed(0)} GFLOP/s, max rel error ${rate.maxRelError.toExponential(1)}`);
    } catch (e) {
      result.errors.push(`tile ${shape.label}: ${(e as Error).message}`);
      log(`subgroup-matrix tile ${shape.label} failed: ${(e as Error).message}`);
    }
  }
  return result;
}
