"""Names vulture reports as unused in tflite_viewer/ that are used all the same.

tests/test_dead_code.py runs vulture over the package (with tools/ and benchmarks/, which
call into it) and this file: a name written here counts as used wherever it is defined.
Each entry says why it stays.  Anything vulture reports that is not here is dead: delete
it rather than list it, unless one of the reasons below applies.  (The kernels
`@register` adds to the op resolver are skipped by the test itself.)
"""
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# -- called by Qt, not by us (virtual overrides) --------------------------------------------
_.paintEvent
_.eventFilter
_.contextMenuEvent
_.dragEnterEvent
_.dropEvent
_.headerData  # QAbstractItemModel
_.createEditor  # QStyledItemDelegate
_.setEditorData
_.setModelData
_.textFromValue  # QSpinBox
_.valueFromText

# -- called by Python itself -----------------------------------------------------------------
_.readable  # io.RawIOBase: zipfile asks the mapped-model file (model/metadata.py)
_.seekable
_.__getattr__  # PEP 562: quant/__init__.py loads the analysis on first use
_.__qualname__  # kernels/common.py names the kernel classes it makes

# -- called by numba (interpreter/compiled_vnni.py's vector type and intrinsics) --------------
_._Vec16Model  # @register_model: numba builds the type's data model from it
_.typingctx  # the typing context every @intrinsic's typer is given, used or not

# -- public API the docs show (docs/*.md run as tests/test_docs.py) --------------------------
_.input_details  # docs/python-api.md
_.signature_runner  # docs/python-api.md
_.add_custom  # docs/python-api.md "Your own kernels"
_.clear_breakpoints  # docs/debugging.md
_.op_evidence  # docs/diff.md
_.quantizer_available  # docs/quantization.md

# -- fields of the flatbuffer schema the model mirrors (read by tests/edit/helpers.py) --------
_.has_rank
_.variant_tensors
_.mutating_variable_inputs
_.debug_metadata_index
_.key_type  # a hash table's declared key type, beside its value type (kernels/hashtable.py)
_.R_CELL  # region 0 of the LSTM step program's table, named for its docstring

# -- reached by name or kept for their lifetime ---------------------------------------------
_.ModelSubgraph  # interpreter/subgraph.py: imported for a quoted annotation only
_.after_reload  # ui/state/diff.py: workspace.py asks each part getattr(part, "after_reload")
_.cross_task  # ui/debugger/crosscheck_dock.py: holds the task so its Qt signal object lives

# -- results and helpers the suite checks against an oracle ----------------------------------
_.for_b  # diff/numeric.py: tests/diff/test_numeric.py
_.undo_text  # edit/document.py: tests/edit/test_document.py
_.every_constant  # edit/sidefiles.py: tests/model/test_external_buffers.py
_.center_x  # graph/layout/result.py: tests/graph/test_layout.py
_.arg_max  # interpreter/integer/reduce.py: checked against LiteRT's ARG_MAX
_.median_diff_ratio  # quant/metrics.py: checked against litert_quantizer's own test values
_.removed_ops  # match/model.py: tests/diff/test_matching.py
_.unavailable  # interpreter/shape_inference.py: tests/interpreter/test_shape_inference.py
_.batched_calls  # quant/cone.py: tests/quant/test_fallback_cone.py
_.forked  # quant/parallel.py: tests/quant/test_side_work.py
_.our_outputs  # interpreter/crosscheck_report.py: tests/interpreter/crosscheck/test_crosscheck.py
_.litert_outputs
_.get_output  # interpreter/interpreter.py: tf.lite.Interpreter's name, used by the tests
_.breakpoint_id  # interpreter/session.py: a Stop's breakpoint, checked by the debugger tests
_.min_inputs  # interpreter/validation.py: an op's arity, checked by its tests
_.max_inputs
_.min_outputs
_.max_outputs

# -- in files other branches are changing now ------------------------------------------------
# busy branch: recheck after merge (ui/: no caller anywhere)
_.last_command
_._current_found
_.values_source
# busy branch: recheck after merge (interpreter/coverage.py: tests only)
_.refusal_gap  # tests/interpreter/test_refusal_audit.py
# busy branch: recheck after merge (ui/: tests only)
_.shown_op_kinds  # tests/ui/test_issue41_window.py
_.last_cross_check
_.sorted_by
_.pinned
_.row_texts
_.row_count
_.fix_texts
_.current_histogram_input
_._index_spins
