"""TensorFlow Lite Micro's signal library: the custom ops of audio front ends.

LiteRT has no kernels for them; TFLM registers them by name (``SignalWindow``,
``SignalRfft`` ...).  Each kernel here follows TFLM's (``signal/micro/kernels`` and
``signal/src`` of tensorflow/tflite-micro) bit for bit, which the tests check against the
``tflite-micro`` Python interpreter:

- fft.py: SignalRfft, SignalIrfft (KissFFT, kissfft.py), SignalFftAutoScale
- spectrum.py: SignalWindow, SignalEnergy
- filter_bank.py: SignalFilterBank, SignalFilterBankSquareRoot,
  SignalFilterBankSpectralSubtraction, SignalFilterBankLog, SignalPCAN
- framing.py: SignalFramer, SignalStacker, SignalDelay, SignalOverlapAdd (streaming ops
  that keep state between invocations)
"""
from . import fft, filter_bank, framing, spectrum  # noqa: F401  (importing registers them)
