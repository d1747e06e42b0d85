"""Selection ops: TOPK_V2, NON_MAX_SUPPRESSION_V4/V5, and the custom op
TFLite_Detection_PostProcess (SSD box decoding + fast or regular multi-class NMS)."""
from __future__ import annotations

import heapq

import numpy as np

from .common import BuiltinOperator as Op, Kernel, as_int_list, define, register


# -- TOPK_V2 ---------------------------------------------------------------------------
def top_k(x: np.ndarray, k: int):
    """Largest k along the last axis, descending; ties keep the lower index first."""
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"k = {k} out of range for a last dimension of {x.shape[-1]}")
    flat = x.reshape(-1, x.shape[-1])
    order = np.empty((flat.shape[0], k), dtype=np.int32)
    for r in range(flat.shape[0]):
        order[r] = np.lexsort((np.arange(flat.shape[1]), -flat[r].astype(np.float64)))[:k]
    values = np.take_along_axis(flat, order, axis=1)
    return values.reshape(x.shape[:-1] + (k,)), order.reshape(x.shape[:-1] + (k,))


def _topk_shape(ctx, node):
    k = ctx.known_value(node, 1)
    if k is None:
        return None
    shape = tuple(ctx.input(node, 0).shape[:-1]) + (as_int_list(k)[0],)
    return [shape, shape]


define(Op.TOPK_V2, (1, 3), lambda ctx, node: top_k(ctx.value(node, 0),
                                                   as_int_list(ctx.value(node, 1))[0]),
       _topk_shape, types="any")


# -- NON_MAX_SUPPRESSION_V4 / V5 -------------------------------------------------------------
def iou(boxes: np.ndarray, i: int, j: int) -> float:
    """Intersection over union of corner boxes [y1, x1, y2, x2] (corners in any order)."""
    bi, bj = boxes[i], boxes[j]
    iy0, iy1 = min(bi[0], bi[2]), max(bi[0], bi[2])
    ix0, ix1 = min(bi[1], bi[3]), max(bi[1], bi[3])
    jy0, jy1 = min(bj[0], bj[2]), max(bj[0], bj[2])
    jx0, jx1 = min(bj[1], bj[3]), max(bj[1], bj[3])
    area_i = np.float32(iy1 - iy0) * np.float32(ix1 - ix0)
    area_j = np.float32(jy1 - jy0) * np.float32(jx1 - jx0)
    if area_i <= 0 or area_j <= 0:
        return 0.0
    inter = np.float32(max(min(iy1, jy1) - max(iy0, jy0), 0)) * \
        np.float32(max(min(ix1, jx1) - max(ix0, jx0), 0))
    return float(np.float32(inter / np.float32(area_i + area_j - inter)))


def non_max_suppression(boxes: np.ndarray, scores: np.ndarray, max_output: int,
                        iou_threshold: float, score_threshold: float,
                        soft_nms_sigma: float = 0.0):
    """Greedy (soft-)NMS as TFLite's reference: (selected indices, their scores)."""
    boxes = np.asarray(boxes, dtype=np.float32)
    heap = [(-float(s), i, i, 0) for i, s in enumerate(scores) if s > score_threshold]
    heapq.heapify(heap)
    n_out = min(len(heap), max_output)
    scale = -0.5 / soft_nms_sigma if soft_nms_sigma > 0 else 0.0
    selected: list[int] = []
    sel_scores: list[float] = []
    while len(selected) < n_out and heap:
        neg, _, idx, begin = heapq.heappop(heap)
        score = original = np.float32(-neg)
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            v = iou(boxes, idx, selected[j])
            if v >= iou_threshold:
                hard = True
                break
            if soft_nms_sigma > 0:
                score = np.float32(score * np.exp(np.float32(scale * v * v)))
            if score <= score_threshold:
                break
        begin = len(selected)
        if not hard:
            if score == original:
                selected.append(idx)
                sel_scores.append(float(score))
            if score > score_threshold:
                heapq.heappush(heap, (-float(score), idx, idx, begin))
    return selected, sel_scores


class _Nms(Kernel):
    soft = False

    def _max(self, ctx, node):
        v = ctx.known_value(node, 2)
        return None if v is None else as_int_list(v)[0]

    def prepare(self, ctx, node):
        m = self._max(ctx, node)
        outs = list(node.outputs)
        for k, o in enumerate(outs):
            t = ctx.tensors[o]
            if k == len(outs) - 1:
                ctx.resize(t, ())
            elif m is None:
                ctx.set_dynamic(t)
            else:
                ctx.resize(t, (m,))

    def invoke(self, ctx, node):
        boxes, scores = ctx.value(node, 0), ctx.value(node, 1)
        m = as_int_list(ctx.value(node, 2))[0]
        iou_t = float(ctx.value(node, 3).reshape(-1)[0])
        score_t = float(ctx.value(node, 4).reshape(-1)[0])
        sigma = float(ctx.value(node, 5).reshape(-1)[0]) if self.soft else 0.0
        sel, sc = non_max_suppression(boxes, scores, m, iou_t, score_t, sigma)
        idx = np.zeros(m, np.int32)
        idx[:len(sel)] = sel
        ctx.set_output(ctx.output(node, 0), idx)
        if self.soft:
            s = np.zeros(m, np.float32)
            s[:len(sc)] = sc
            ctx.set_output(ctx.output(node, 1), s)
        ctx.set_output(ctx.output(node, len(node.outputs) - 1), np.array(len(sel), np.int32))


@register(Op.NON_MAX_SUPPRESSION_V4, versions=(1, 1))
class NonMaxSuppressionV4(_Nms):
    pass


@register(Op.NON_MAX_SUPPRESSION_V5, versions=(1, 1))
class NonMaxSuppressionV5(_Nms):
    soft = True


# -- TFLite_Detection_PostProcess -----------------------------------------------------------
def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales) -> np.ndarray:
    """SSD box decoding: centre-size encodings against [yc, xc, h, w] anchors -> corners."""
    ys, xs, hs, ws = (np.float32(s) for s in scales)
    e = encodings.astype(np.float32)
    a = anchors.astype(np.float32)
    yc = e[:, 0] / ys * a[:, 2] + a[:, 0]
    xc = e[:, 1] / xs * a[:, 3] + a[:, 1]
    hh = np.float32(0.5) * np.exp(e[:, 2] / hs) * a[:, 2]
    hw = np.float32(0.5) * np.exp(e[:, 3] / ws) * a[:, 3]
    return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1).astype(np.float32)


def _iou_one_to_many(boxes: np.ndarray, i: int, js: np.ndarray) -> np.ndarray:
    """`iou` of box i with boxes js, vectorized with the same float32 operations."""
    bi = boxes[i]
    iy0, iy1 = min(bi[0], bi[2]), max(bi[0], bi[2])
    ix0, ix1 = min(bi[1], bi[3]), max(bi[1], bi[3])
    b = boxes[js]
    jy0, jy1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    jx0, jx1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area_i = np.float32(iy1 - iy0) * np.float32(ix1 - ix0)
    area_j = (jy1 - jy0) * (jx1 - jx0)
    inter = (np.maximum(np.minimum(iy1, jy1) - np.maximum(iy0, jy0), np.float32(0))
             * np.maximum(np.minimum(ix1, jx1) - np.maximum(ix0, jx0), np.float32(0)))
    with np.errstate(all="ignore"):
        out = inter / (area_i + area_j - inter)
    return np.where((area_i <= 0) | (area_j <= 0), np.float32(0), out).astype(np.float32)


def _nms_single_class(boxes, scores, max_det, score_t, iou_t) -> list[int]:
    boxes = np.asarray(boxes, np.float32)
    scores = np.asarray(scores)
    cand = np.flatnonzero(scores >= score_t)
    cand = cand[np.lexsort((cand, -scores[cand].astype(np.float64)))]
    active = np.ones(len(cand), bool)
    selected: list[int] = []
    for a in range(len(cand)):
        if len(selected) >= max_det:
            break
        if not active[a]:
            continue
        i = int(cand[a])
        selected.append(i)
        rest = a + 1 + np.flatnonzero(active[a + 1:])
        if rest.size:
            active[rest[_iou_one_to_many(boxes, i, cand[rest]) > iou_t]] = False
    return selected


def detection_postprocess(encodings, class_scores, anchors, opts: dict):
    """(boxes [1, D, 4], classes [1, D], scores [1, D], count [1]) for one image."""
    num_classes = int(opts["num_classes"])
    max_det = int(opts["max_detections"])
    per_det = int(opts.get("max_classes_per_detection", 1))
    score_t = float(opts.get("nms_score_threshold", 0.0))
    iou_t = float(opts.get("nms_iou_threshold", 0.0))
    scales = (opts.get("y_scale", 10.0), opts.get("x_scale", 10.0), opts.get("h_scale", 5.0),
              opts.get("w_scale", 5.0))
    boxes = decode_boxes(encodings.reshape(-1, 4), anchors.reshape(-1, 4), scales)
    scores = class_scores.reshape(boxes.shape[0], -1).astype(np.float32)
    offset = scores.shape[1] - num_classes
    scores = scores[:, offset:]
    results: list[tuple[int, int, float]] = []  # (box, class, score)
    if opts.get("use_regular_nms", False):
        per_class = int(opts.get("detections_per_class", 100))
        for c in range(num_classes):
            for i in _nms_single_class(boxes, scores[:, c], per_class, score_t, iou_t):
                results.append((i, c, float(scores[i, c])))
        results.sort(key=lambda r: -r[2])
        results = results[:max_det]
        count = len(results)
    else:
        k = min(per_det, num_classes)
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        best = np.take_along_axis(scores, top[:, :1], axis=1)[:, 0]
        selected = _nms_single_class(boxes, best, max_det, score_t, iou_t)
        for i in selected:
            for c in top[i]:
                results.append((i, int(c), float(scores[i, c])))
        count = len(selected)  # TFLite counts boxes, not (box, class) pairs
    size = max_det * per_det
    out_boxes = np.zeros((1, size, 4), np.float32)
    out_classes = np.zeros((1, size), np.float32)
    out_scores = np.zeros((1, size), np.float32)
    for n, (i, c, s) in enumerate(results[:size]):
        out_boxes[0, n] = boxes[i]
        out_classes[0, n] = c
        out_scores[0, n] = s
    return out_boxes, out_classes, out_scores, np.array([count], np.float32)


@register("TFLite_Detection_PostProcess", versions=(1, 1 << 30))
class DetectionPostProcess(Kernel):
    """Inputs: box encodings [1, N, 4], class scores [1, N, C(+background)], anchors
    [N, 4]; FlexBuffer options as in TFLite."""

    types = "float+uint8+int8"

    def check(self, ctx, node):
        if not isinstance(node.custom_data, dict):
            return "TFLite_Detection_PostProcess without FlexBuffer options"
        return super().check(ctx, node)

    @staticmethod
    def _float(ctx, node, k) -> np.ndarray:
        """An input as float32: quantized (uint8/int8) inputs are dequantized as LiteRT's
        DequantizeBoxEncodings / DequantizeClassPredictions do, (float(q) - zp) * scale."""
        t = ctx.input(node, k)
        x = ctx.value(node, k)
        if x.dtype.kind == "f":
            return x
        q = t.quantization
        scale = np.float32(q.scale[0]) if q is not None and q.scale.size else np.float32(1)
        zp = np.float32(q.zero_point[0]) if q is not None and q.zero_point.size else np.float32(0)
        return ((x.astype(np.float32) - zp) * scale).astype(np.float32)

    def prepare(self, ctx, node):
        o = node.custom_data
        max_det = int(o["max_detections"])
        size = max_det * int(o.get("max_classes_per_detection", 1))
        shapes = [(1, size, 4), (1, size), (1, size), (1,)]
        for t, s in zip(node.outputs, shapes):
            ctx.resize(ctx.tensors[t], s)

    def invoke(self, ctx, node):
        outs = detection_postprocess(self._float(ctx, node, 0), self._float(ctx, node, 1),
                                     self._float(ctx, node, 2), node.custom_data)
        for t, v in zip(node.outputs, outs):
            ctx.set_output(ctx.tensors[t], v)
