"""The Spark Structured Streaming job: validated broker stats to windowed loads.

Pure DataFrame transforms live in ``schema``, ``validate`` and ``loads``; everything that touches
Kafka, checkpoints or triggers lives in ``job``. ``session`` builds the SparkSession.
"""
