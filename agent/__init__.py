"""The collector agent: samples one broker every interval and publishes BrokerStats records."""
