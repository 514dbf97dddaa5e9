"""Where users already train: a `torch.profiler` handler that explains each cycle, and
callbacks for the Hugging Face `Trainer` and Lightning.

Each writes the usual artifacts through `capture.session` and, after every profiling
cycle, reads the trace back like `kinetoscope explain` (`integrations.cycle`). The
framework modules import their framework only when used, so `import kinetoscope`
stays free of transformers and lightning.
"""
