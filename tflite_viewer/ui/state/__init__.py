"""The window's state without Qt: what the window shows and decides, as plain Python that
tests and scripts drive without a display (an import-linter contract, ``ui-state-qt-free``,
keeps PySide6 out of it).

`workspace` holds one open model and everything shown about it (the `Hub` the views
subscribe to); the feature parts a workspace keeps (`quant`, `crosscheck`, `diff`,
`memory`, `targets`); the canvas's overlays (`overlays`) and the docks' declarations
(`docks`); navigation, selection and search; and what the canvas draws (`scene_data`
with `edge_routes` and `scene_inline`), with the statistics the panels show
(`tensor_stats`, `block_stats`, `summary`).
"""
