"""How LiteRT hands a model's operators to a delegate, read from the file alone.

`facts` (what the rules read of a model, in a few numpy passes), `partition` (LiteRT's
graph partitioner) and the XNNPACK delegate's own checks (`xnnpack`, `xnnpack_ops` and
their helpers).  Two layers read them: `tflite_viewer.targets` turns them into verdicts
per operator, and the interpreter's ``xnnpack`` kernel set computes the operators of a
partition as XNNPACK does (`tflite_viewer.interpreter.kernel_sets`).  Nothing here runs a
model or imports the interpreter.
"""
