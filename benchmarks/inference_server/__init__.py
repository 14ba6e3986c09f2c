"""inference 1.8.3's real HTTP server under churn: upstream's manager classes and the drop-in's.

``python3 -m benchmarks.inference_server`` (docs/roboflow-dropin.md, "The real
server under load") serves upstream's ``HttpInterface(WithFixedSizeCache(
ModelManager(registry), max_size=N))`` with uvicorn on 127.0.0.1, over fake
models, and drives it with concurrent keep-alive clients that infer, add,
remove, clear and describe a few model ids, once with upstream's stock classes
and once with the drop-in's, alternating, for each configuration (with
evictions, ``max_size`` 3; without, 8). It prints, per implementation, the
medians of the runs and the drop-in's ratios to stock.

Modules: ``_fakes`` (instrumented fake models and registry), ``_server`` (the
server process), ``_client`` (the load), ``_report`` (a run's summary, medians,
the table), ``__main__`` (the command).
"""
