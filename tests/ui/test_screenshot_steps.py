"""`--screenshot` with `--cross-check` and `--compare-float` (the README's screenshots of the
cross-check and the Quantization dock are made with them): the analysis ran, its dock and
the canvas's colours are in the picture, and bad arguments are one line and exit 2."""
from __future__ import annotations

from tflite_viewer import cli
from tflite_viewer.ui.state.overlays import HEAT, QUALITY, ramp

from .conftest import model_path
from .test_screenshot_render import _has_color, _pixels

INT8, FLOAT = model_path("small_cnn_dilated_int8.tflite"), model_path("small_cnn_dilated_float.tflite")


def test_compare_float_draws_the_overlay_and_its_legend(tmp_path):
    out = tmp_path / "quant.png"
    assert cli.main([str(INT8), "--screenshot", str(out), "--compare-float", str(FLOAT),
                     "--overlay", "sqnr_db"]) == 0
    px = _pixels(out)
    # the legend's ramp, green to red: its middle colours are drawn nowhere else (without
    # --overlay none of them is in the picture)
    for t in (3 / 31, 10 / 31, 21 / 31, 28 / 31):
        assert _has_color(px, "#" + ramp(t, QUALITY)[3:], tolerance=2, at_least=40), t


def test_cross_check_colours_the_canvas_by_error(tmp_path):
    out = tmp_path / "cross.png"
    assert cli.main([str(model_path("sine_float.tflite")), "--screenshot", str(out),
                     "--cross-check"]) == 0
    # the legend's ramp of the error colours, painted over white
    amber = ramp(0.5, HEAT)  # "#aarrggbb"
    alpha = int(amber[1:3], 16) / 255
    rgb = [int(amber[i:i + 2], 16) for i in (3, 5, 7)]
    blended = "#{:02x}{:02x}{:02x}".format(*(round(c * alpha + 0xf6 * (1 - alpha))
                                             for c in rgb))  # over the legend strip's grey
    assert _has_color(_pixels(out), blended, tolerance=4, at_least=20)


def test_the_steps_refuse_what_they_cannot_do(tmp_path, capsys):
    out = tmp_path / "x.png"
    assert cli.main([str(INT8), "--screenshot", str(out), "--compare-float", str(FLOAT),
                     "--overlay", "nonsense"]) == 2
    assert "--overlay nonsense: one of" in capsys.readouterr().err
    assert cli.main([str(INT8), "--cross-check"]) == 2
    assert "--cross-check goes with --screenshot" in capsys.readouterr().err
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    assert cli.main([str(INT8), "--screenshot", str(out), "--compare-float", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compare-float " in err
    assert "bad.tflite: file identifier" in err and "not a TFLite model" in err
