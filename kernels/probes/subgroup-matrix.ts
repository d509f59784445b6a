/**
 * Int8 subgroup matrices (Dawn's chromium-experimental-subgroup-matrix, tensor cores on NVIDIA) on a
 * device that has them: whether a kernel using them compiles and computes what it should, and how fast a
 * prefill product on them runs. Experimental: the feature needs Dawn's unsafe APIs allowed, and no
 * adapter of the development machine offers it, so this runs in the GPU lab (bench/gpu/lab.ts) only.
 *
 * 1. The builtins' syntax: Dawn changed subgroupMatrixLoad/Store from a `col_major` argument to a
 *    template parameter (`<T, col_major>`, `<row_major>`); each kernel is written with LOAD_LEFT,
 *    LOAD_RIGHT and STORE and expanded in both forms, the first that compiles and multiplies a 16 x 32 by a
 *    32 x 16 int8 matrix exactly (subgroup-matrix-hello.wgsl) wins.
 * 2. The tile (subgroup-matrix-tile.wgsl): Q8_0-like products of int8 rows with a scale a block of 32
 *    against int8 x, on shapes of a prefill step; sampled outputs checked against float64 sums of the
 *    same integers and scales, then timed (best of several submits, all copies in one pass).
 */
import helloSource from './subgroup-matrix-hello.wgsl?raw';
import tileSource from './subgroup-matrix-tile.wgsl?raw';
import { bestOf, onePass, submitMs } from './timing.ts';

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

export interface SubgroupMatrixProbe {
  syntax?: SubgroupMatrixSyntax;
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

/** `code` with LOAD_LEFT(arr, offset, stride), LOAD_RIGHT(...) and STORE(arr, offset, value, stride) written in `syntax`. */
export function expandSubgroupMatrix(code: string, syntax: SubgroupMatrixSyntax): string {
  const write = (name: string, a: string[]): string => {
    const major = name === 'LOAD_RIGHT' ? 'col_major' : 'row_major';
    if (name === 'STORE') return syntax === 'template' ? `subgroupMatrixStore<row_major>(&${a[0]}, ${a[1]}, ${a[2]}, ${a[3]})` : `subgroupMatrixStore(&${a[0]}, ${a[1]}, ${a[2]}, false, ${a[3]})`;
    const type = name === 'LOAD_LEFT' ? LEFT : RIGHT;
    return syntax === 'template' ? `subgroupMatrixLoad<${type}, ${major}>(&${a[0]}, ${a[1]}, ${a[2]})` : `subgroupMatrixLoad<${type}>(&${a[0]}, ${a[1]}, ${major === 'col_major'}, ${a[2]})`;
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
  const out = new Int8Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) % 255) - 127;
  }
  return out;
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

async function readBack(device: GPUDevice, src: GPUBuffer, bytes: number): Promise<ArrayBuffer> {
  const dst = device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, dst.size);
  device.queue.submit([enc.finish()]);
  await dst.mapAsync(GPUMapMode.READ);
  const out = dst.getMappedRange().slice(0);
  dst.destroy();
  return out;
}

/** The hello kernel in `syntax`: '' where it compiled and its 16 x 16 product is exact, else what went wrong. */
async function tryHello(device: GPUDevice, syntax: SubgroupMatrixSyntax): Promise<string> {
  const pipeline = await compiles(device, expandSubgroupMatrix(helloSource, syntax));
  const w = randomInt8(16 * 32, 11);
  const x = randomInt8(16 * 32, 12);
  const out = buffer(device, 256 * 4);
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [buffer(device, w), buffer(device, x), out].map((b, binding) => ({ binding, resource: { buffer: b } })) });
  device.queue.submit([onePass(device, (pass) => { pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(1); })]);
  const got = new Int32Array(await readBack(device, out, 256 * 4));
  const wrong: string[] = [];
  for (let r = 0; r < 16; r++) {
    for (let c = 0; c < 16; c++) {
      let want = 0;
      for (let k = 0; k < 32; k++) want += w[r * 32 + k] * x[c * 32 + k];
      if (got[r * 16 + c] !== want && wrong.length < 4) wrong.push(`[${r}][${c}] ${got[r * 16 + c]} for ${want}`);
    }
  }
  return wrong.length ? `wrong values: ${wrong.join(', ')}` : '';
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
  const got = new Float32Array(await readBack(device, y, tokens * n * 4));
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
  for (const syntax of ['template', 'argument'] as const) {
    const outcome = await tryHello(device, syntax).catch((e: Error) => `failed: ${e.message}`);
    result.tried.push({ syntax, outcome: outcome || 'exact' });
    log(`subgroup matrices, ${syntax} syntax: ${outcome || 'compiled, the 16 x 32 x 16 int8 product exact'}`);
    if (!outcome) {
      result.syntax = syntax;
      break;
    }
  }
  if (!result.syntax) return result;
  let pipeline: GPUComputePipeline;
  try {
    pipeline = await compiles(device, expandSubgroupMatrix(tileSource, result.syntax));
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
