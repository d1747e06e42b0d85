"""Will it fit: the tensor arenas of TFLite Micro and LiteRT, computed from a model.

>>> from tflite_viewer.model import load_model
>>> from tflite_viewer.memory import plan_tflm
>>> plan = plan_tflm(load_model("person_detect.tflite"), pointer_bytes=8)
>>> plan.head_bytes, plan.peak_op
(55296, (0, 2))

Qt-free and independent of the interpreter and the editor: it reads a `Model` and
returns plain data (`MemoryPlan`) that the command line prints and the window draws.
"""
from .facts import MemoryFacts, read_facts
from .greedy import plan_greedy
from .litert import plan_litert
from .offline import METADATA_NAME, encode_offline, read_offline
from .offline_search import OfflinePlan, best_offline_plan
from .plan import Arena, MemoryPlan, OfflineCheck, PlannedBuffer, timeline
from .tflm import plan_tflm

__all__ = ["Arena", "METADATA_NAME", "MemoryFacts", "MemoryPlan", "OfflineCheck", "OfflinePlan",
           "PlannedBuffer", "best_offline_plan", "encode_offline", "plan_greedy",
           "plan_litert", "plan_tflm", "read_facts", "read_offline", "timeline"]
