"""MediaPipe's attention ops (face landmark models with attention): Landmarks2TransformMatrix,
TransformLandmarks, TransformTensorBilinear.  No published runtime runs them outside
MediaPipe's graphs, so each is checked against a hand computation written here from the
definition in mediapipe/util/tflite/operations (float64 loops), and its shapes and options
through models written by the project's writer."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.errors import ExecutionError, UnsupportedOpError

from tests.interpreter.signal.models import CustomOp, custom_model

F32 = np.float32


def _run(code, version, inputs, out_shape, options):
    tensors = [(x.shape, F32) for x in inputs] + [(out_shape, F32)]
    model = custom_model(tensors, [CustomOp(code, list(range(len(inputs))), [len(inputs)],
                                            options, version)],
                         list(range(len(inputs))), [len(inputs)])
    return list(Interpreter(model).invoke(list(inputs)).values())[0]


def _matmul(a, b):
    return [[sum(a[r][k] * b[k][c] for k in range(len(b))) for c in range(len(b[0]))]
            for r in range(len(a))]


def _landmarks(rng, n=12):
    pts = rng.uniform(50, 150, (n, 3))
    return pts.astype(F32)


def test_landmarks_to_matrix_v2_by_hand():
    rng = np.random.default_rng(50)
    lm = _landmarks(rng)
    opts = {"subset_idxs": [0, 3, 5, 7, 9], "left_rotation_idx": 2, "right_rotation_idx": 4,
            "target_rotation_radians": 0.3, "output_height": 64, "output_width": 48,
            "scale_x": 1.5, "scale_y": 1.25}
    out = _run("Landmarks2TransformMatrix", 2, [lm[None]], (1, 4, 4), opts)
    # by hand, in double precision
    pts = [[float(v) for v in p] for p in lm]
    l, r = pts[2], pts[4]
    rot = 0.3 - math.atan2(r[1] - l[1], r[0] - l[0])
    subset = [0, 3, 5, 7, 9, 9]  # the odd last index pairs with itself
    xs = [pts[i][0] * math.cos(rot) - pts[i][1] * math.sin(rot) for i in subset]
    ys = [pts[i][0] * math.sin(rot) + pts[i][1] * math.cos(rot) for i in subset]
    w, h = max(xs) - min(xs), max(ys) - min(ys)
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    crop_x = cx * math.cos(-rot) - cy * math.sin(-rot)
    crop_y = cx * math.sin(-rot) + cy * math.cos(-rot)
    c, s = math.cos(-rot), math.sin(-rot)
    m = _matmul(_matmul(_matmul(
        [[1, 0, 0, crop_x], [0, 1, 0, crop_y], [0, 0, 1, 0], [0, 0, 0, 1]],
        [[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
        [[1.5 * w / 48, 0, 0, 0], [0, 1.25 * h / 64, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
        [[1, 0, 0, -24], [0, 1, 0, -32], [0, 0, 1, 0], [0, 0, 0, 1]])
    assert out.shape == (1, 4, 4)
    np.testing.assert_allclose(out[0], m, rtol=1e-5, atol=1e-4)
    # the output's centre pixel maps to the crop's centre
    centre = out[0] @ np.array([24, 32, 0, 1], F32)
    np.testing.assert_allclose(centre[:2], [crop_x, crop_y], rtol=1e-5)


def test_landmarks_to_matrix_v1_by_hand():
    rng = np.random.default_rng(51)
    lm = _landmarks(rng)
    opts = {"input_hw": [192, 160], "output_hw": [64, 48], "dimensions": 3,
            "landmarks_range": 200, "bbox_size_multiplier": 1.5, "left_rotation_idx": 1,
            "right_rotation_idx": 6, "subset": [0, 2, 4, 8]}
    out = _run("Landmarks2TransformMatrix", 1, [lm.reshape(1, 1, 1, -1)], (1, 4, 4), opts)
    pts = [[float(v) for v in p] for p in lm]
    l, r = pts[1], pts[6]
    a = -math.atan((r[1] - l[1]) / (r[0] - l[0]))
    xs = [pts[i][0] * math.cos(a) - pts[i][1] * math.sin(a) for i in (0, 2, 4, 8)]
    ys = [pts[i][0] * math.sin(a) + pts[i][1] * math.cos(a) for i in (0, 2, 4, 8)]
    bw, bh = (max(xs) - min(xs)) * 1.5, (max(ys) - min(ys)) * 1.5
    mx, my = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    rmx = mx * math.cos(-a) - my * math.sin(-a)
    rmy = mx * math.sin(-a) + my * math.cos(-a)
    rotation = [[math.cos(-a), -math.sin(-a), rmx / 200 * 2 - 1],
                [math.sin(-a), math.cos(-a), rmy / 200 * 2 - 1], [0, 0, 1]]
    itm = _matmul(_matmul(_matmul(
        [[159 / 2, 0, 159 / 2], [0, 191 / 2, 191 / 2], [0, 0, 1]], rotation),
        [[bw / 200, 0, 0], [0, bh / 200, 0], [0, 0, 1]]),
        [[2 / 47, 0, -1], [0, 2 / 63, -1], [0, 0, 1]])
    expect = [[itm[0][0], itm[0][1], 0, itm[0][2]], [itm[1][0], itm[1][1], 0, itm[1][2]],
              [itm[2][0], itm[2][1], itm[2][2], 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(out[0], expect, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("version,dims", [(1, 2), (1, 3), (2, 2), (2, 3)])
def test_transform_landmarks_by_hand(version, dims):
    rng = np.random.default_rng(52 + dims)
    matrix = rng.uniform(-2, 2, (1, 4, 4)).astype(F32)
    if version == 1:
        lm = rng.uniform(-50, 50, (1, 2, 3, 4 * dims)).astype(F32)
        opts = {"dimensions": dims, "scale": 0.5}
    else:
        lm = rng.uniform(-50, 50, (1, 7, dims)).astype(F32)
        opts = {}
    out = _run("TransformLandmarks", version, [lm, matrix], lm.shape, opts)
    scale = 0.5 if version == 1 else 1.0
    m = matrix.reshape(-1).astype(float)
    flat, expect = lm.reshape(-1), lm.reshape(-1).astype(float).copy()
    for k in range(0, flat.size, dims):
        x, y = float(flat[k]), float(flat[k + 1])
        expect[k] = m[0] * x + m[1] * y + m[3] * scale
        expect[k + 1] = m[4] * x + m[5] * y + m[7] * scale
    assert out.shape == lm.shape
    np.testing.assert_allclose(out.reshape(-1), expect, rtol=1e-5, atol=1e-4)


def _bilinear_by_hand(img, m, oh, ow, align):
    """The definition: output pixel (x, y) samples the input at the matrix's image of it;
    outside [0, W-1] x [0, H-1] the pixel is 0, neighbours beyond the border read 0."""
    h, w, ch = img.shape[1:]
    m = [float(v) for v in m.reshape(-1)]
    if align:  # v2: half-pixel shifts around the matrix
        m[3] += m[0] * 0.5 + m[1] * 0.5 - 0.5
        m[7] += m[4] * 0.5 + m[5] * 0.5 - 0.5
    out = np.zeros((1, oh, ow, ch))
    for y in range(oh):
        for x in range(ow):
            tx, ty = m[0] * x + m[1] * y + m[3], m[4] * x + m[5] * y + m[7]
            if tx < 0 or tx > w - 1 or ty < 0 or ty > h - 1:
                continue
            x0, y0 = math.floor(tx), math.floor(ty)
            for c in range(ch):
                def at(yy, xx):
                    return float(img[0, yy, xx, c]) if 0 <= yy < h and 0 <= xx < w else 0.0
                dx, dy = tx - x0, ty - y0
                top = (1 - dx) * at(y0, x0) + dx * at(y0, x0 + 1)
                bottom = (1 - dx) * at(y0 + 1, x0) + dx * at(y0 + 1, x0 + 1)
                out[0, y, x, c] = (1 - dy) * top + dy * bottom
    return out


@pytest.mark.parametrize("code,version", [("TransformTensorBilinear", 2),
                                          ("TransformTensorBilinear", 1),
                                          ("TransformTensor", 1)])
def test_transform_tensor_bilinear_by_hand(code, version):
    rng = np.random.default_rng(53 + version)
    img = rng.uniform(-1, 1, (1, 9, 11, 3)).astype(F32)
    a = 0.4
    matrix = np.array([[1.3 * math.cos(a), -1.1 * math.sin(a), 0, 2.2],
                       [1.3 * math.sin(a), 1.1 * math.cos(a), 0, -1.4],
                       [0, 0, 1, 0], [0, 0, 0, 1]], F32)[None]
    opts = ({"output_height": 7, "output_width": 6} if version == 2 else
            {"mode": "bilinear", "output_size": [7, 6]})
    out = _run(code, version, [img, matrix], (1, 7, 6, 3), opts)
    expect = _bilinear_by_hand(img, matrix, 7, 6, version == 2)
    assert out.shape == (1, 7, 6, 3)
    assert (expect == 0).any() and (expect != 0).any()  # both outside and inside pixels
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)


def test_transform_tensor_identity_crops_exactly():
    img = np.arange(2 * 5 * 6, dtype=F32).reshape(1, 5, 6, 2)
    eye = np.eye(4, dtype=F32)[None]
    out = _run("TransformTensorBilinear", 2, [img, eye], (1, 4, 3, 2),
               {"output_height": 4, "output_width": 3})
    np.testing.assert_array_equal(out, img[:, :4, :3])


def test_output_shape_from_options_when_the_model_leaves_it_out():
    img = np.ones((1, 5, 6, 2), F32)
    eye = np.eye(4, dtype=F32)[None]
    out = _run("TransformTensorBilinear", 2, [img, eye], (), {"output_height": 3, "output_width": 4})
    assert out.shape == (1, 3, 4, 2)


def test_bad_options_and_shapes_are_refused():
    lm = np.zeros((1, 5, 3), F32)
    with pytest.raises(UnsupportedOpError, match="incorrect output_height"):
        _run("Landmarks2TransformMatrix", 2, [lm], (1, 4, 4),
             {"subset_idxs": [0, 1], "left_rotation_idx": 0, "right_rotation_idx": 1,
              "output_width": 8, "scale_x": 1.0, "scale_y": 1.0})
    with pytest.raises(ExecutionError, match="beyond the 5 landmarks"):
        _run("Landmarks2TransformMatrix", 2, [lm], (1, 4, 4),
             {"subset_idxs": [0, 9], "left_rotation_idx": 0, "right_rotation_idx": 1,
              "output_height": 8, "output_width": 8, "scale_x": 1.0, "scale_y": 1.0})
    with pytest.raises(UnsupportedOpError, match="only bilinear"):
        _run("TransformTensor", 1, [np.ones((1, 4, 4, 1), F32), np.eye(4, dtype=F32)[None]],
             (1, 2, 2, 1), {"mode": "nearest", "output_size": [2, 2]})
    with pytest.raises(ExecutionError, match="2 or 3 values"):
        _run("TransformLandmarks", 2, [np.zeros((1, 4, 5), F32), np.eye(4, dtype=F32)[None]],
             (1, 4, 5), {})
    with pytest.raises(UnsupportedOpError, match="version 3 is not supported"):
        _run("TransformLandmarks", 3, [lm, np.eye(4, dtype=F32)[None]], (1, 5, 3), {})
