// runner.js: runs a portc web bundle (`portc export G -t webgpu -o DIR`) with WebGPU. The bundle's
// manifest.json lists the device buffers, the WGSL kernels and the dispatches of one run in
// order, each with the byte ranges it binds and its work groups, as portc's own WebGPU runtime
// issues them (webgpu/runtime.c); this module makes the buffers, pipelines and bind groups once
// and replays the list as one compute pass per run.
//
//   import { loadBundle, Model, check } from "./runner.js";
//   const bundle = await loadBundle(".");              // manifest, kernels, weights and the sample
//   const model = await Model.create(bundle);          // a device, its buffers and pipelines
//   const run = await model.run(bundle.sample);        // {outputs: [{name, dtype, shape, values}], ms, gpuMs}
//   const report = check(bundle, run.outputs);         // against the float64 reference's outputs
//
// Inputs are raw little-endian bytes of each input's dtype (a Uint8Array, or any typed array),
// keyed by input name; outputs come back as numbers (Float32Array, Int32Array, ...), f16 and
// bf16 widened to f32.

const words = (bytes) => Math.max(4, (bytes + 3) & ~3);

export async function loadBundle(base = ".") {
  const root = new URL(base.endsWith("/") ? base : base + "/", location.href);
  const get = async (file) => {
    const r = await fetch(new URL(file, root));
    if (!r.ok) throw new Error(`${file}: HTTP ${r.status} ${r.statusText}`);
    return r;
  };
  const manifest = await (await get("manifest.json")).json();
  if (manifest.format !== "portc-web 1") throw new Error(`manifest.json is "${manifest.format}"; this runner reads "portc-web 1"`);
  const files = {};
  for (const f of ["weights.bin", "inputs.bin", "expected.bin"]) files[f] = await (await get(f)).arrayBuffer();
  const kernels = await Promise.all(manifest.kernels.map(async (k) => (await get(k.file)).text()));
  const sample = {};
  for (const b of manifest.buffers) if (b.role === "input") sample[b.name] = new Uint8Array(files[b.file], b.offset, b.bytes);
  return { manifest, files, kernels, sample };
}

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

function decode(dtype, bytes) {
  switch (dtype) {
    case "f32": return new Float32Array(bytes);
    case "i32": return new Int32Array(bytes);
    case "bool": return new Uint8Array(bytes);
    case "f16": return Float32Array.from(new Uint16Array(bytes), halfToFloat);
    case "bf16": {
      const half = new Uint16Array(bytes), wide = new Uint32Array(half.length);
      for (let i = 0; i < half.length; i++) wide[i] = half[i] << 16;
      return new Float32Array(wide.buffer);
    }
    default: throw new Error(`outputs of dtype ${dtype} are not read by this runner`);
  }
}

export class Model {
  // a device of an adapter that grants the limits the bundle needs; every buffer, pipeline and
  // bind group of the run made here, the parameters and constants written once
  static async create(bundle, adapterOptions = {}) {
    if (!globalThis.navigator || !navigator.gpu) throw new Error("this browser has no WebGPU (navigator.gpu is missing)");
    const adapter = await navigator.gpu.requestAdapter(adapterOptions);
    if (!adapter) throw new Error("no WebGPU adapter (is WebGPU enabled in this browser?)");
    const m = bundle.manifest, requiredLimits = {};
    for (const [name, value] of Object.entries(m.limits)) {
      if (!(name in adapter.limits)) continue;
      if (adapter.limits[name] < value)
        throw new Error(`the model needs ${name} of at least ${value}; this adapter has ${adapter.limits[name]}`);
      requiredLimits[name] = value;
    }
    const requiredFeatures = adapter.features.has("timestamp-query") ? ["timestamp-query"] : [];
    const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    const model = new Model(bundle, device, adapter);
    await model.build();
    return model;
  }

  constructor(bundle, device, adapter) {
    this.bundle = bundle;
    this.device = device;
    this.adapter = adapter;
    this.lost = null;
    device.lost.then((info) => { this.lost = `the device was lost: ${info.message}`; });
  }

  async build() {
    const { manifest: m, files, kernels } = this.bundle, d = this.device;
    d.pushErrorScope("validation");
    d.pushErrorScope("out-of-memory");
    this.buffers = m.buffers.map((b) =>
      d.createBuffer({ label: b.name, size: b.size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC }));
    m.buffers.forEach((b, i) => {
      if (b.role === "param" || b.role === "const") this.write(i, new Uint8Array(files[b.file], b.offset, b.bytes));
      if (b.role === "symbols" && b.values.length) d.queue.writeBuffer(this.buffers[i], 0, Int32Array.from(b.values));
    });
    const oom = await d.popErrorScope();
    if (oom) throw new Error(`out of device memory for the model's buffers: ${oom.message}`);
    this.pipelines = await Promise.all(kernels.map(async (code, i) => {
      const module = d.createShaderModule({ label: m.kernels[i].file, code });
      const info = await module.getCompilationInfo();
      const errors = info.messages.filter((x) => x.type === "error");
      if (errors.length)
        throw new Error(`${m.kernels[i].file} does not compile: ` + errors.map((x) => `line ${x.lineNum}, column ${x.linePos}: ${x.message}`).join("; "));
      return d.createComputePipelineAsync({ label: m.kernels[i].file, layout: "auto", compute: { module, entryPoint: m.kernels[i].entry } });
    }));
    this.groups = m.dispatches.map((x) => d.createBindGroup({
      layout: this.pipelines[x.kernel].getBindGroupLayout(0),
      entries: x.bind.map(([buf, offset, size], j) => ({ binding: j, resource: { buffer: this.buffers[buf], offset, size } })),
    }));
    // what a run reads back: the outputs, the status word, and the pass's timestamps
    this.reads = [];
    let at = 0;
    for (const o of m.outputs) {
      this.reads.push({ buffer: this.buffers[o.buffer], offset: o.offset, size: words(o.bytes), at });
      at += words(o.bytes);
    }
    this.statusAt = at;
    this.status = this.buffers[m.buffers.findIndex((b) => b.role === "status")];
    at += 8;
    this.stampsAt = at;
    if (d.features.has("timestamp-query")) {
      this.stamps = d.createQuerySet({ type: "timestamp", count: 2 });
      this.resolved = d.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      at += 16;
    }
    this.readback = d.createBuffer({ size: at, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const invalid = await d.popErrorScope();
    if (invalid) throw new Error(`the model's pipelines or bindings are invalid here: ${invalid.message}`);
  }

  write(i, bytes) {
    const u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const whole = u8.byteLength & ~3;
    if (whole) this.device.queue.writeBuffer(this.buffers[i], 0, u8, 0, whole);
    if (whole < u8.byteLength) { // a tail of 1 to 3 bytes goes as a word padded with zeros
      const tail = new Uint8Array(4);
      tail.set(u8.subarray(whole));
      this.device.queue.writeBuffer(this.buffers[i], whole, tail);
    }
  }

  // one run: inputs (name -> bytes) written, the dispatches as one compute pass, the outputs read
  async run(inputs) {
    const { manifest: m } = this.bundle, d = this.device;
    if (this.lost) throw new Error(this.lost);
    m.buffers.forEach((b, i) => {
      if (b.role !== "input") return;
      const x = inputs[b.name];
      if (!x) throw new Error(`no value for input ${b.name}`);
      if (x.byteLength !== b.bytes) throw new Error(`input ${b.name} is ${b.dtype}[${b.shape}]: ${b.bytes} bytes, given ${x.byteLength}`);
      this.write(i, x);
    });
    d.queue.writeBuffer(this.status, 0, new Uint32Array(1));
    d.pushErrorScope("validation");
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass(this.stamps ? { timestampWrites: { querySet: this.stamps, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
    m.dispatches.forEach((x, i) => {
      pass.setPipeline(this.pipelines[x.kernel]);
      pass.setBindGroup(0, this.groups[i]);
      pass.dispatchWorkgroups(...x.groups);
    });
    pass.end();
    for (const r of this.reads) enc.copyBufferToBuffer(r.buffer, r.offset, this.readback, r.at, r.size);
    enc.copyBufferToBuffer(this.status, 0, this.readback, this.statusAt, 4);
    if (this.stamps) {
      enc.resolveQuerySet(this.stamps, 0, 2, this.resolved, 0);
      enc.copyBufferToBuffer(this.resolved, 0, this.readback, this.stampsAt, 16);
    }
    const t0 = performance.now();
    d.queue.submit([enc.finish()]);
    const invalid = await d.popErrorScope();
    if (invalid) throw new Error(`the run is invalid: ${invalid.message}`);
    await this.readback.mapAsync(GPUMapMode.READ);
    const ms = performance.now() - t0;
    const data = this.readback.getMappedRange().slice(0);
    this.readback.unmap();
    const status = new Uint32Array(data, this.statusAt, 1)[0];
    if (status) throw new Error(status & 2 ? "integer division by zero" : "an index is out of range");
    let gpuMs = null;
    if (this.stamps) {
      const [begin, end] = new BigInt64Array(data, this.stampsAt, 2);
      if (end > begin) gpuMs = Number(end - begin) / 1e6;
    }
    const outputs = m.outputs.map((o, k) => ({
      name: o.name, dtype: o.dtype, shape: o.shape,
      values: decode(o.dtype, data.slice(this.reads[k].at, this.reads[k].at + o.bytes)),
    }));
    return { outputs, ms, gpuMs };
  }
}

// each output against the reference's, elementwise: |got - ref| <= rtol * (|ref| + max |ref|)
export function check(bundle, outputs) {
  const { manifest: m, files } = bundle;
  const report = { ok: true, outputs: [] };
  m.outputs.forEach((o, k) => {
    const got = outputs[k].values;
    const ref = new Float64Array(files[o.expected.file], o.expected.offset, got.length);
    let scale = 0;
    for (const r of ref) if (Number.isFinite(r)) scale = Math.max(scale, Math.abs(r));
    let worst = 0, at = -1, ok = got.length === ref.length;
    for (let i = 0; i < ref.length; i++) {
      const r = ref[i], g = got[i];
      if (Number.isNaN(r) || !Number.isFinite(r)) {
        if (!(Object.is(r, g) || (Number.isNaN(r) && Number.isNaN(g)))) ok = false, at = i, worst = Infinity;
        continue;
      }
      const err = Math.abs(g - r) / (Math.abs(r) + scale || 1);
      if (!(err <= worst)) worst = err, at = i; // NaN counts as the worst
    }
    ok = ok && worst <= o.rtol;
    report.ok = report.ok && ok;
    report.outputs.push({ name: o.name, ok, worst, at, rtol: o.rtol, got: at >= 0 ? got[at] : null, ref: at >= 0 ? ref[at] : null });
  });
  return report;
}
