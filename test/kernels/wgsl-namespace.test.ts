/**
 * Joining kernels into one shader (kernels/runtime/wgsl-namespace.ts): module-scope names get the
 * kernel's suffix wherever they are used, and nothing else does (members, swizzles, builtins, names kept);
 * bindings move to the joined shader's numbers, a shared one declared once; and the joined source of two
 * copies of one kernel compiles.
 */
import { describe, expect, it } from 'vitest';
import { moduleNames, namespaceWgsl, rebindWgsl } from '../../kernels/runtime/wgsl-namespace.ts';
import { testContext } from '../helpers/gpu.ts';

const KERNEL = `
struct Params { n: u32, scale: f32, }
@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<private> params: Params;
override WG: u32 = 16u;
const HALF: f32 = 0.5;
// A comment naming x and y.
fn scaled(v: vec4f) -> vec4f {
  let x = v * params.scale; // a local named as a global
  return x * HALF;
}
fn body(i: u32) {
  let v = scaled(x[i]);
  y[i] = v.x + v.y + v.z + v.w;
}
`;

describe('WGSL namespacing', () => {
  it('finds the module-scope declarations, not locals or members', () => {
    expect([...moduleNames(KERNEL)].sort()).toEqual(['HALF', 'Params', 'WG', 'body', 'params', 'scaled', 'x', 'y'].sort());
  });

  it('suffixes module-scope names where they are used, keeping members, swizzles and kept names', () => {
    const out = namespaceWgsl(KERNEL, '_a', new Set(['Params']));
    expect(out).toContain('var<storage, read> x_a: array<vec4f>;');
    expect(out).toContain('fn scaled_a(v: vec4f) -> vec4f');
    expect(out).toContain('let x_a = v * params_a.scale;');
    expect(out).toContain('return x_a * HALF_a;');
    expect(out).toContain('let v = scaled_a(x_a[i]);');
    expect(out).toContain('y_a[i] = v.x + v.y + v.z + v.w;');
    expect(out).toContain('struct Params { n: u32, scale: f32, }');
    expect(out).toContain('var<private> params_a: Params;');
    expect(out).not.toContain('A comment');
  });

  it('moves bindings to the joined numbers, reads made read_write, a shared binding declared once', () => {
    const a = rebindWgsl(namespaceWgsl(KERNEL, '_a', new Set(['Params'])), { 0: { binding: 0 }, 1: { binding: 1 } });
    const b = rebindWgsl(namespaceWgsl(KERNEL, '_b', new Set(['Params'])), { 0: { binding: 2 }, 1: { binding: 1, sameAs: 'y_a' } });
    expect(a).toContain('@group(0) @binding(0) var<storage, read_write> x_a: array<vec4f>;');
    expect(b).toContain('@group(0) @binding(2) var<storage, read_write> x_b: array<vec4f>;');
    expect(b).not.toMatch(/var<storage, read_write> y_b/);
    expect(b).toContain('y_a[i] = v.x');
    expect(() => rebindWgsl(KERNEL, { 0: { binding: 0 } })).toThrow(/binding 1 \(y\) has no place/);
  });

  it('two copies of one kernel joined compile into one shader', async () => {
    const ctx = await testContext();
    const a = rebindWgsl(namespaceWgsl(KERNEL, '_a', new Set(['Params'])), { 0: { binding: 0 }, 1: { binding: 1 } });
    const b = rebindWgsl(namespaceWgsl(KERNEL, '_b', new Set(['Params'])), { 0: { binding: 2 }, 1: { binding: 1, sameAs: 'y_a' } }).replace(/struct Params \{[^}]*\}/, '');
    const main = '@compute @workgroup_size(WG_a) fn main(@builtin(global_invocation_id) g: vec3u) { body_a(g.x); body_b(g.x); }';
    const module = ctx.device.createShaderModule({ code: [a, b, main].join('\n') });
    const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error');
    expect(errors.map((m) => m.message)).toEqual([]);
  });
});
