/**
 * Per-step parameter arena: every dispatch of a step writes its `Params` into a 256-byte slot of one
 * CPU-side array, and one `writeBuffer` uploads them all before the step's single submit. Dispatches
 * select their slot with a dynamic offset, so nothing is allocated per token.
 */
import { PARAM_SLOT_BYTES, type KernelContext, type CompiledKernel } from './context.ts';

const SLOT_WORDS = PARAM_SLOT_BYTES / 4;

/** One dispatch of a step as the arena issued it, enough to issue it again (runtime/step-profile.ts). */
export interface DispatchRecord {
  label: string;
  pipeline: GPUComputePipeline;
  buffers: GPUBindGroup;
  /** The params slot's first word. */
  base: number;
  x: number;
  y: number;
  z: number;
}

export class ParamArena {
  readonly buffer: GPUBuffer;
  readonly bindGroup: GPUBindGroup;
  /** Word views of the CPU mirror; a slot starts at word `slot * 64`. */
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  readonly f32: Float32Array;
  /** offsets[i] = i * 256, so setBindGroup can take a subarray without allocating. */
  private readonly offsets: Uint32Array;
  private used = 0;
  /**
   * Where set, every dispatch of the current step is also appended here (emptied at reset()), so after a
   * step it holds that step's dispatches, whose params are still the arena's (step-profile.ts).
   */
  recorder?: DispatchRecord[];
  /**
   * A step encoded with room for copies between its dispatches (beginStep): its encoder and open pass.
   * dispatch() then issues on this pass, whichever pass it is handed, so a kernel may end it for a copy
   * (copyBetween) without its callers holding a stale pass.
   */
  private step: { encoder: GPUCommandEncoder; pass: GPUComputePassEncoder; label: string } | undefined;

  constructor(
    private readonly ctx: KernelContext,
    readonly capacity: number,
  ) {
    this.buffer = ctx.device.createBuffer({
      label: 'param-arena',
      size: capacity * PARAM_SLOT_BYTES,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.bindGroup = ctx.device.createBindGroup({
      label: 'param-arena',
      layout: ctx.paramsLayout,
      entries: [{ binding: 0, resource: { buffer: this.buffer, size: PARAM_SLOT_BYTES } }],
    });
    const mirror = new ArrayBuffer(capacity * PARAM_SLOT_BYTES);
    this.u32 = new Uint32Array(mirror);
    this.i32 = new Int32Array(mirror);
    this.f32 = new Float32Array(mirror);
    this.offsets = new Uint32Array(capacity);
    for (let i = 0; i < capacity; i++) this.offsets[i] = i * PARAM_SLOT_BYTES;
  }

  /** Start a new step: slots are handed out from the beginning again. */
  reset(): void {
    this.used = 0;
    // A step whose encoding failed left its pass open; its encoder is dropped with it.
    this.step = undefined;
    if (this.recorder) this.recorder.length = 0;
  }

  /** Take the next slot; returns the word index where its params begin (zeroed). */
  slot(): number {
    if (this.used >= this.capacity) throw new Error(`param arena full (${this.capacity} dispatches in one step)`);
    const base = this.used * SLOT_WORDS;
    this.u32.fill(0, base, base + SLOT_WORDS);
    this.used++;
    return base;
  }

  /** Begin a step's pass on `encoder` whose dispatches may be separated by copies (copyBetween). */
  beginStep(encoder: GPUCommandEncoder, label: string): GPUComputePassEncoder {
    if (this.step) throw new Error('param arena: a step is already open (reset() starts a step)');
    this.step = { encoder, pass: encoder.beginComputePass({ label }), label };
    return this.step.pass;
  }

  /** The open step goes on in a new command encoder (a segment of a step submitted in parts). */
  continueStep(encoder: GPUCommandEncoder): GPUComputePassEncoder {
    const step = this.openStep();
    step.pass.end();
    step.encoder = encoder;
    step.pass = encoder.beginComputePass({ label: step.label });
    return step.pass;
  }

  /** End the open step's pass; its encoder is the caller's to finish. */
  endStep(): void {
    this.openStep().pass.end();
    this.step = undefined;
  }

  /** Whether a kernel may run a copy between its dispatches (a step begun with beginStep is open). */
  get copiesBetween(): boolean {
    return this.step !== undefined;
  }

  /** End the open step's pass, let `copy` encode on its encoder, and begin the next pass. */
  copyBetween(copy: (encoder: GPUCommandEncoder) => void): void {
    const step = this.openStep();
    step.pass.end();
    copy(step.encoder);
    step.pass = step.encoder.beginComputePass({ label: step.label });
  }

  private openStep(): NonNullable<ParamArena['step']> {
    if (!this.step) throw new Error('param arena: no step is open (beginStep)');
    return this.step;
  }

  /** Set pipeline, buffers and the params slot `base` (from slot()) on a pass, then dispatch. */
  dispatch(pass: GPUComputePassEncoder, kernel: CompiledKernel, buffers: GPUBindGroup, base: number, x: number, y = 1, z = 1): void {
    const max = this.ctx.caps.maxWorkgroupsPerDimension;
    if (x > max || y > max || z > max) throw new Error(`${kernel.label}: dispatch ${x}x${y}x${z} exceeds ${max} workgroups per dimension`);
    this.recorder?.push({ label: kernel.label, pipeline: kernel.pipeline, buffers, base, x, y, z });
    this.issue(this.step?.pass ?? pass, kernel.pipeline, buffers, base, x, y, z);
  }

  /** A recorded dispatch again, with the params its slot holds now (the last flushed step's). */
  replay(pass: GPUComputePassEncoder, d: DispatchRecord): void {
    this.issue(pass, d.pipeline, d.buffers, d.base, d.x, d.y, d.z);
  }

  private issue(pass: GPUComputePassEncoder, pipeline: GPUComputePipeline, buffers: GPUBindGroup, base: number, x: number, y: number, z: number): void {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, buffers);
    pass.setBindGroup(1, this.bindGroup, this.offsets, base / SLOT_WORDS, 1);
    pass.dispatchWorkgroups(x, y, z);
  }

  /** Upload the slots used this step; call once before submitting the step's command buffer. */
  flush(): void {
    if (this.used === 0) return;
    this.ctx.device.queue.writeBuffer(this.buffer, 0, this.u32.buffer, 0, this.used * PARAM_SLOT_BYTES);
  }

  get slotsUsed(): number {
    return this.used;
  }
}
