"""The window (PySide6).  The only package of tflite-viewer that imports Qt.

`app.run_app(args)` is what `tflite-viewer [MODEL]` runs; `render.render_to_file` draws a
subgraph headless (the `render` subcommand).  `scene_data` (with `edge_routes`), `tensor_stats`
and `search` are Qt-free helpers the widgets are built on.
"""