#!/usr/bin/env python3
"""PyTorch side of the GPU comparison: the leaky ESN step x <- (1-a) x + a tanh(W x + u_t) with a
dense f32 W, as an eager loop and as CUDA-graph replays of 100 steps (input projection
precomputed), single sequence and batched (also batched all in f16, PyTorch's usual half
precision), and the product W·x alone per step (torch.mm in a CUDA graph: the floor of any loop
that calls the library's GEMM once per step). µs/step from CUDA events after warm-up, median
of 5.

Run on the GPU machine in the same command as `gpu_bench` (same GPU):
    python3 benches/pytorch_esn.py
It prints a table and the JSON lines of its figures (benches/python/records.py).
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "python"))
from records import Recorder  # noqa: E402 (found through the path above)


def timed(fn, steps, repeats=5):
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / steps)
    return statistics.median(samples)


def case(n, batch, steps, dtype=torch.float32, leak=0.3):
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(n, n, device="cuda", generator=g) * (0.9 / n ** 0.5)).to(dtype)
    shape = (steps, n) if batch is None else (steps, n, batch)
    drive = (torch.rand(shape, device="cuda", generator=g) - 0.5).to(dtype)
    x = torch.zeros(n if batch is None else (n, batch), device="cuda", dtype=dtype)

    def eager():
        nonlocal x
        for t in range(steps):
            x = (1 - leak) * x + leak * torch.tanh(w @ x + drive[t])

    chunk = 100
    static_x = x.clone()
    static_drive = drive[:chunk].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = static_x
            for t in range(chunk):
                y = (1 - leak) * y + leak * torch.tanh(w @ y + static_drive[t])
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = static_x
        for t in range(chunk):
            y = (1 - leak) * y + leak * torch.tanh(w @ y + static_drive[t])
        static_x.copy_(y)

    def replay():
        for _ in range(steps // chunk):
            graph.replay()

    # The product alone (W·x into a preallocated output), as a CUDA graph of `chunk` products:
    # the floor of any loop that calls the library's GEMM (GEMV) once per step.
    product = torch.empty_like(static_x)
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.mm(w, static_x.reshape(n, -1), out=product.reshape(n, -1))
    torch.cuda.current_stream().wait_stream(s)
    product_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(product_graph):
        for _ in range(chunk):
            torch.mm(w, static_x.reshape(n, -1), out=product.reshape(n, -1))

    def replay_product():
        for _ in range(steps // chunk):
            product_graph.replay()

    return (timed(eager, steps), timed(replay, steps // chunk * chunk),
            timed(replay_product, steps // chunk * chunk))


def main():
    recorder = Recorder("pytorch_esn", gpu=torch.cuda.get_device_name(0))
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print("| case | PyTorch eager µs/step | PyTorch CUDA graph µs/step | W·x alone (torch.mm, CUDA graph) µs/step |")
    print("|---|---|---|---|")
    cases = [(1000, None, 2000, torch.float32), (4096, None, 1000, torch.float32),
             (8192, None, 500, torch.float32), (1000, 512, 1000, torch.float32),
             (1000, 512, 1000, torch.float16)]
    for n, batch, steps, dtype in cases:
        eager, graph, product = case(n, batch, steps, dtype)
        label = f"N={n} dense" + ("" if batch is None else f", B={batch}")
        label += ", f16 (W, states, drive)" if dtype == torch.float16 else ""
        print(f"| {label} | {eager:.2f} | {graph:.2f} | {product:.2f} |")
        precision = "f16" if dtype == torch.float16 else "f32"
        params = {"N": n, "B": batch or 1, "precision": precision}
        recorder.figure(params, "eager loop", eager, "µs/step")
        recorder.figure(params, "CUDA graph of 100 steps", graph, "µs/step")
        recorder.figure(params, "W·x alone, torch.mm in a CUDA graph", product, "µs/step")


if __name__ == "__main__":
    main()
