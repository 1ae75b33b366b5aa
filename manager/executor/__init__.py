"""Carries out moves through the Kafka Admin API: batches within limits, throttles, tracking until
done.
"""
