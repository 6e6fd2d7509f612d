"""The mock SDK's device model: profile files, estimates against what the mock reports at run
time, the cost table against single estimates, sanity, and the paper's findings on the zoo."""

from pathlib import Path

import numpy as np
import pytest

from paleozoic import _runtime as rt
from paleozoic.optimize import fuse_all, per_layer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic_testing.zoo import ZOO_MODELS

REPO_PROFILE = Path(__file__).resolve().parents[2] / "runtime_cpp" / "profiles" / "mlu100.profile"
MPS = list(range(1, 33))


@pytest.fixture(autouse=True)
def builtin_profile():
    rt.reset_device_profile()
    yield
    rt.reset_device_profile()


def write_profile(tmp_path, text):
    path = tmp_path / "dev.profile"
    path.write_text(text)
    return str(path)


def profile_text(**changes):
    lines = []
    for line in REPO_PROFILE.read_text().splitlines():
        key = line.split("=")[0].strip()
        if key in changes and not line.lstrip().startswith("#"):
            if changes[key] is None:
                continue
            line = f"{key} = {changes[key]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


# ---- profile files ----------------------------------------------------------------------

def test_builtin_defaults_equal_bundled_profile():
    builtin = rt.device_profile()
    for path in (rt.default_profile_path(), str(REPO_PROFILE)):
        rt.set_device_profile(path)
        assert rt.device_profile() == builtin
    assert Path(rt.default_profile_path()).read_text() == REPO_PROFILE.read_text()
    assert builtin["cores"] == 32 and builtin["dram_gbps"] == 102.4
    assert builtin["peak_fp16_tflops"] == 64 and builtin["peak_int8_tops"] == 128


def test_every_assumption_is_marked():
    text = REPO_PROFILE.read_text()
    assert text.count("ASSUMPTION") >= 7
    for key in ("onchip_bytes_per_core", "launch_us", "sync_us_per_log2_core"):
        block = text.split(f"\n{key} =")[0].rsplit("\n\n", 1)[-1]
        assert "ASSUMPTION" in block, key


@pytest.mark.parametrize("text, message", [
    (profile_text(launch_us="ten"), "'launch_us' needs a number, got 'ten'"),
    (profile_text(launch_us=""), "'launch_us' needs a number"),
    (profile_text(dram_gbps="-3"), "'dram_gbps' must be > 0"),
    (profile_text(cores="3.5"), "'cores' needs an integer"),
    (profile_text() + "sram_kb = 12\n", "unknown key 'sram_kb'"),
    (profile_text() + "cores = 16\n", "key 'cores' given twice"),
    (profile_text(launch_us=None), "key 'launch_us' is missing"),
    (profile_text() + "just words\n", "expected `key = value`"),
])
def test_profile_errors(tmp_path, text, message):
    path = write_profile(tmp_path, text)
    before = rt.device_profile()
    with pytest.raises(rt.Error, match="dev.profile"):
        rt.set_device_profile(path)
    with pytest.raises(rt.Error) as err:
        rt.set_device_profile(path)
    assert message in str(err.value)
    assert rt.device_profile() == before  # unchanged on error


def test_missing_profile(tmp_path):
    with pytest.raises(rt.Error, match="cannot open device profile"):
        rt.set_device_profile(str(tmp_path / "nope.profile"))


def test_profile_changes_times(tmp_path):
    s, layers, _ = small_graph(bind=False)
    base = s.estimate_block(layers[:1], 4, fuse=False)
    rt.set_device_profile(write_profile(tmp_path, profile_text(launch_us=110)))
    assert s.estimate_block(layers[:1], 4, fuse=False) == pytest.approx(base + 100, rel=1e-6)


# ---- small graphs -------------------------------------------------------------------------

def small_graph(bind=True):
    """conv-relu-pool, then a residual pair and a 1x1 branch read by a concat (a DAG)."""
    r = np.random.default_rng(7)
    s = rt.Session()
    x = s.input("x", [1, 8, 32, 32])
    c1 = s.conv("c1", x, out_channels=16, kernel=(3, 3), pads=(1, 1, 1, 1))
    r1 = s.active("r1", c1.output, "relu")
    p1 = s.pool("p1", r1.output, mode="max", kernel=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1))
    c2 = s.conv("c2", p1.output, out_channels=16, kernel=(3, 3), pads=(1, 1, 1, 1))
    r2 = s.active("r2", c2.output, "relu")
    add = s.add("add", r2.output, p1.output)
    c3 = s.conv("c3", add.output, out_channels=8, kernel=(1, 1))
    cat = s.concat("cat", [add.output, c3.output], axis=1)
    c4 = s.conv("c4", cat.output, out_channels=16, kernel=(5, 5), stride=(2, 2),
                pads=(2, 2, 2, 2))
    s.mark_output(c4.output)
    layers = [c1, r1, p1, c2, r2, add, c3, cat, c4]
    if bind:
        for layer, ci, k in ((c1, 8, 3), (c2, 16, 3), (c3, 16, 1), (c4, 24, 5)):
            co = layer.output.shape[1]
            layer.config(r.standard_normal((co, ci, k, k), dtype=np.float32) * 0.1,
                         r.standard_normal(co, dtype=np.float32))
    return s, layers, x


@pytest.mark.parametrize("mp", [1, 3, 8, 32])
def test_estimate_equals_runtime_report(mp):
    s, layers, x = small_graph()
    x_data = np.random.default_rng(0).standard_normal((1, 8, 32, 32), dtype=np.float32)
    cuts = [(0, 3, True), (3, 6, False), (6, 9, True)]
    want = [s.estimate_block(layers[a:b], mp, fuse=fuse) for a, b, fuse in cuts]
    for n, (a, b, fuse) in enumerate(cuts):
        s.compile_block(f"b{n}", fuse=fuse, mp=mp, layers=layers[a:b])
    s.set_input(x, x_data)
    s.run()
    np.testing.assert_allclose(s.block_micros(), want, rtol=1e-5)


def test_fused_single_and_explicit_outputs():
    s, layers, _ = small_graph(bind=False)
    default = s.estimate_block(layers[0:3], 8)  # c1, r1 stay inside; p1 leaves
    explicit = s.estimate_block(layers[0:3], 8, outputs=[layers[2].output])
    more = s.estimate_block(layers[0:3], 8, outputs=[layers[1].output, layers[2].output])
    assert default == explicit and more > default  # writing r1 out costs DRAM traffic
    info = s.explain_block(layers[0:3], 8)
    assert info["total_us"] == pytest.approx(default, rel=1e-6)
    assert info["launch_sync_us"] + info["layers_us"] == pytest.approx(info["total_us"])


def test_cost_table_matches_estimates():
    s, layers, _ = small_graph(bind=False)
    mps = [1, 2, 5, 16, 32]
    table = s.cost_table(layers, mps)
    n = len(layers)
    assert table.shape == (n, n + 1, len(mps)) and table.dtype == np.float64
    for i in range(n):
        for j in range(n + 1):
            for k, mp in enumerate(mps):
                if j <= i:
                    assert np.isinf(table[i, j, k])
                else:
                    want = s.estimate_block(layers[i:j], mp, fuse=j - i > 1)
                    assert table[i, j, k] == pytest.approx(want, rel=1e-6), (i, j, mp)


def test_more_mp_speeds_up_a_big_conv():
    s = rt.Session()
    x = s.input("x", [1, 128, 56, 56])
    conv = s.conv("c", x, out_channels=128, kernel=(3, 3), pads=(1, 1, 1, 1))
    times = [s.estimate_block([conv], mp, fuse=False) for mp in (1, 2, 4, 8, 16, 32)]
    assert all(a > b for a, b in zip(times, times[1:]))
    assert times[0] / times[-1] > 10


def test_launch_cost_makes_tiny_layers_prefer_fusion():
    s = rt.Session()
    t = s.input("x", [1, 4, 4, 4])
    layers = []
    for i in range(4):
        layers.append(s.active(f"r{i}", t, "relu"))
        t = layers[-1].output
    s.mark_output(t)
    for mp in (1, 4):
        assert s.estimate_block(layers, mp) < s.estimate_block(layers, mp, fuse=False) / 3


def test_halo_makes_high_mp_lose_on_long_large_kernel_chains():
    s = rt.Session()
    t = s.input("x", [1, 64, 56, 56])
    layers = []
    for i in range(6):
        layers.append(s.conv(f"c{i}", t, out_channels=64, kernel=(5, 5), pads=(2, 2, 2, 2)))
        t = layers[-1].output
    s.mark_output(t)
    info = {mp: s.explain_block(layers, mp) for mp in (1, 2, 4, 8, 32)}
    share = [info[mp]["halo_us"] / info[mp]["compute_us"] for mp in (1, 2, 4, 8, 32)]
    assert share[0] == 0 and all(a < b for a, b in zip(share, share[1:]))
    # Fused, the chain's tiles recompute overlapping rows; alone, each layer splits its
    # channels with no overlap. On one core fusion only saves launches; on 32 it loses.
    assert s.estimate_block(layers, 1) < s.estimate_block(layers, 1, fuse=False)
    assert s.estimate_block(layers, 32) > s.estimate_block(layers, 32, fuse=False)


# ---- the zoo: the paper's findings -----------------------------------------------------

def dp_best(table):
    """best[j] = min_i best[i] + min_k table[i, j, k]; returns (cost, [(i, j, k)])."""
    n = table.shape[0]
    cheapest, which = table.min(axis=2), table.argmin(axis=2)
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    back = [0] * (n + 1)
    for j in range(1, n + 1):
        costs = best[:j] + cheapest[:j, j]
        back[j] = int(np.argmin(costs))
        best[j] = costs[back[j]]
    blocks, j = [], n
    while j > 0:
        blocks.append((back[j], j, int(which[back[j], j])))
        j = back[j]
    return float(best[n]), blocks[::-1]


_oracles = {}


def oracle(name):
    if name not in _oracles:
        from paleozoic.pipeline import load_queue
        from helpers import zoo_model

        _oracles[name] = DeviceModelOracle(load_queue(zoo_model(name)))
    return _oracles[name]


@pytest.mark.parametrize("name", ["resnet50", "bvlc_alexnet"])
def test_fuse_all_beats_per_layer(name):
    o = oracle(name)
    assert o.plan_cost(fuse_all(o.queue)) < o.plan_cost(per_layer(o.queue))


def test_vgg19_fuse_all_loses_to_best_plan_by_halo():
    o = oracle("vgg19")
    n = len(o.queue.layers)
    best, _ = dp_best(o.cost_table(MPS))
    fused = o.plan_cost(fuse_all(o.queue))
    assert fused > 1.2 * best
    # The loss is the recomputed halo rows: without them fuse-all would match the best plan.
    info = o.explain_block(0, n, 32)
    assert info["total_us"] == pytest.approx(fused, rel=1e-6)
    assert fused - info["halo_us"] <= best


def test_a_long_models_table_spread_over_threads_matches_its_estimates():
    # Past 64 layers the table's columns are computed on several threads (device_model.cpp).
    o = oracle("resnet50")
    n = len(o._layers)
    assert n >= 64
    mps = [1, 7, 32]
    table = o._session.cost_table(o._layers, mps)
    for j in [*range(2, n + 1, 5), n - 1, n]:
        for i in sorted({0, j // 2, j - 2, j - 1}):
            for k, mp in enumerate(mps):
                want = o._session.estimate_block(o._layers[i:j], mp, fuse=j - i > 1)
                assert table[i, j, k] == pytest.approx(want, rel=1e-6), (i, j, mp)


def test_oracle_agrees_with_its_table():
    o = oracle("bvlc_alexnet")
    table = o.cost_table(MPS)
    assert o.cost_table(MPS) is table  # cached
    for (i, j, mp) in [(0, 1, 1), (0, 5, 8), (3, 12, 32), (0, len(o.queue.layers), 32)]:
        assert table[i, j, mp - 1] == pytest.approx(o.block_cost(i, j, mp), rel=1e-6)


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_best_plan_beats_both_baselines(name):
    o = oracle(name)
    best, _ = dp_best(o.cost_table(MPS))
    assert best < o.plan_cost(fuse_all(o.queue))
    assert best < o.plan_cost(per_layer(o.queue))


# ---- emitted sessions: -p PROFILE ----------------------------------------------------------

def test_session_profile_option(tmp_path, small_cnn):
    import subprocess

    from paleozoic.pipeline import build_session, compile_model, load_queue

    out = compile_model(small_cnn, tmp_path / "sess", plan="fuse-all")
    exe = build_session(out)

    def run(*extra):
        return subprocess.run([str(exe), "-w", str(out / "weights.bin"), "-o", str(tmp_path),
                               *extra], capture_output=True, text=True)

    def total(result):
        assert result.returncode == 0, result.stderr
        line = next(x for x in result.stdout.splitlines() if x.startswith("total device time"))
        return float(line.split(":")[1].split()[0])

    builtin = total(run())
    assert total(run("-p", rt.default_profile_path())) == pytest.approx(builtin, abs=0.11)
    slow = write_profile(tmp_path, profile_text(launch_us=1010))
    blocks = len(fuse_all(load_queue(small_cnn)).blocks)
    assert total(run("-p", slow)) == pytest.approx(builtin + 1000 * blocks, abs=0.2)
    bad = run("-p", str(tmp_path / "missing.profile"))
    assert bad.returncode != 0 and "cannot open device profile" in bad.stderr


# ---- 1-D layers: reshapes of unit axes are views --------------------------------------

def test_unit_axis_reshapes_are_free_views():
    """[N, C, L] <-> [N, C, 1, L] around the 1-D layers keeps every element in place: no
    time alone, none added to a block (no bytes, no barrier); a reshape that regroups
    channels (GroupNorm's [N, G, -1]) is a copy and costs."""
    from paleozoic.pipeline import load_queue
    from paleozoic_testing.speech import deconv_pool_1d, speech_encoder

    queue = load_queue(speech_encoder())
    oracle = DeviceModelOracle(queue)
    reshapes = [(i, layer) for i, layer in enumerate(queue.layers) if layer.kind == "Reshape"]
    views = [i for i, layer in reshapes
             if [d for d in queue.shape(layer.inputs[0]) if d != 1] ==
             [d for d in queue.shape(layer.output) if d != 1]]
    assert views and len(views) < len(reshapes)
    for i, _ in reshapes:
        cost = oracle.block_cost(i, i + 1, 4)
        assert (cost == 0.0) == (i in views)

    queue = load_queue(deconv_pool_1d())
    oracle = DeviceModelOracle(queue)
    last = len(queue.layers) - 1
    assert queue.layers[last].kind == "Reshape" and queue.layers[last].output in queue.outputs
    for mp in (1, 4):
        # The view after the block's last layer adds nothing: that layer's output leaves
        # the block either way, and needs no barrier for a reader inside it.
        assert oracle.block_cost(1, last + 1, mp) == pytest.approx(
            oracle.block_cost(1, last, mp), rel=1e-6)  # block_cost is a float
        table = oracle.cost_table([mp])
        assert table[1, last + 1, 0] == pytest.approx(table[1, last, 0], rel=1e-12)
