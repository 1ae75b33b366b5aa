package kmedic.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Sliding-window loads with state that does not multiply by window / slide (streaming/loads.py
 * builds the input; docs/streaming.md says what a load means).
 *
 * <p>Each key keeps one state row: a ring of its last window / slide buckets, each holding the
 * bucket's maximum per rate (or a {@link Sketch} for a percentile), report counts, and the
 * latest leader, followers and broker facts. Every micro-batch that brings a key reports, the
 * key's window (the buckets ending with the one that holds its latest report) is emitted. Rows
 * whose group key starts with {@code dlq|} are invalid records passing through to the DLQ: they
 * are emitted as they came and touch no state, so one read of the source feeds both outputs.
 * A key silent for a whole window past the watermark is dropped (its window is empty by then).
 */
public final class BucketRing implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
  private static final long serialVersionUID = 1L;
  static final String DLQ_PREFIX = "dlq|";
  private static final StructType STATE = new StructType().add("ring", DataTypes.BinaryType);

  private final long slideMs;
  private final int buckets;
  private final double quantile;
  private final double gamma;
  private final double logGamma;
  private final int maxBins;
  private final int iEventMs, iKind, iKey, iTopic, iPartition, iRole, iBroker;
  private final int[] iRates;
  private final int iCovered, iReason, iDlqKey, iDlqValue, iDlqHeaders;

  private BucketRing(
      StructType input, long slideMs, int buckets, double quantile, double accuracy, int maxBins) {
    this.slideMs = slideMs;
    this.buckets = buckets;
    this.quantile = quantile;
    this.gamma = (1 + accuracy) / (1 - accuracy);
    this.logGamma = Math.log(gamma);
    this.maxBins = maxBins;
    iEventMs = input.fieldIndex("event_ms");
    iKind = input.fieldIndex("kind");
    iKey = input.fieldIndex("key");
    iTopic = input.fieldIndex("topic");
    iPartition = input.fieldIndex("partition");
    iRole = input.fieldIndex("role");
    iBroker = input.fieldIndex("broker_id");
    iRates =
        new int[] {
          input.fieldIndex("bytes_in_per_s"),
          input.fieldIndex("bytes_out_per_s"),
          input.fieldIndex("messages_in_per_s")
        };
    iCovered = input.fieldIndex("replicas_covered");
    iReason = input.fieldIndex("failure_reason");
    iDlqKey = input.fieldIndex("dlq_key");
    iDlqValue = input.fieldIndex("dlq_value");
    iDlqHeaders = input.fieldIndex("dlq_headers");
  }

  /**
   * The loads (and DLQ pass-through) of {@code rows}, grouped by its {@code group_key} column.
   * quantile below 0 means the maximum; accuracy and maxBins shape the percentile sketch.
   */
  public static Dataset<Row> apply(
      Dataset<Row> rows,
      long slideMs,
      int buckets,
      double quantile,
      double accuracy,
      int maxBins) {
    StructType input = rows.schema();
    DataType headers = input.apply("dlq_headers").dataType();
    BucketRing ring = new BucketRing(input, slideMs, buckets, quantile, accuracy, maxBins);
    // Grouped by the column itself: no row is turned into a Java object to find its key.
    return rows.groupBy("group_key")
        .as(Encoders.STRING(), Encoders.row(input))
        .flatMapGroupsWithState(
            ring,
            OutputMode.Update(),
            Encoders.row(STATE),
            Encoders.row(outputSchema(headers)),
            GroupStateTimeout.EventTimeTimeout());
  }

  static StructType outputSchema(DataType headers) {
    return new StructType(
        new StructField[] {
          DataTypes.createStructField("kind", DataTypes.StringType, false),
          DataTypes.createStructField("key", DataTypes.StringType, true),
          DataTypes.createStructField("topic", DataTypes.StringType, true),
          DataTypes.createStructField("partition", DataTypes.IntegerType, true),
          DataTypes.createStructField("window_start_ms", DataTypes.LongType, true),
          DataTypes.createStructField("window_end_ms", DataTypes.LongType, true),
          DataTypes.createStructField("bytes_in_per_s", DataTypes.DoubleType, true),
          DataTypes.createStructField("bytes_out_per_s", DataTypes.DoubleType, true),
          DataTypes.createStructField("messages_in_per_s", DataTypes.DoubleType, true),
          DataTypes.createStructField("samples", DataTypes.LongType, true),
          DataTypes.createStructField("reports", DataTypes.LongType, true),
          DataTypes.createStructField("last_event_ms", DataTypes.LongType, true),
          DataTypes.createStructField("leader_id", DataTypes.IntegerType, true),
          DataTypes.createStructField(
              "follower_ids", DataTypes.createArrayType(DataTypes.IntegerType, false), true),
          DataTypes.createStructField("replicas_covered", DataTypes.IntegerType, true),
          DataTypes.createStructField("failure_reason", DataTypes.StringType, true),
          DataTypes.createStructField("dlq_key", DataTypes.BinaryType, true),
          DataTypes.createStructField("dlq_value", DataTypes.BinaryType, true),
          DataTypes.createStructField("dlq_headers", headers, true),
        });
  }

  @Override
  public Iterator<Row> call(String group, Iterator<Row> rows, GroupState<Row> state) {
    if (state.hasTimedOut()) {
      state.remove();
      return Collections.emptyIterator();
    }
    if (group.startsWith(DLQ_PREFIX)) {
      List<Row> out = new ArrayList<>(1);
      rows.forEachRemaining(r -> out.add(dlqRow(r)));
      return out.iterator();
    }
    KeyState k =
        state.exists()
            ? KeyState.fromBytes((byte[]) state.get().get(0))
            : new KeyState(buckets, quantile >= 0);
    Row first = null;
    while (rows.hasNext()) {
      Row r = rows.next();
      long ms = r.getLong(iEventMs);
      int slot = k.slotFor(Math.floorDiv(ms, slideMs));
      if (slot < 0) {
        continue; // older than every window the key can still publish
      }
      if (first == null) {
        first = r;
      }
      merge(k, slot, r, ms);
    }
    if (first == null) {
      return Collections.emptyIterator();
    }
    long windowEnd = (k.ringEnd + 1) * slideMs;
    long windowStart = windowEnd - buckets * slideMs;
    k.followers.values().removeIf(ms -> ms < windowStart);
    state.update(RowFactory.create((Object) k.toBytes()));
    setTimeout(state, windowEnd + buckets * slideMs);
    return Collections.singletonList(loadRow(first, k, windowStart, windowEnd)).iterator();
  }

  private void merge(KeyState k, int slot, Row r, long ms) {
    k.reports[slot]++;
    if (!r.isNullAt(iRates[0])) {
      k.samples[slot]++;
    }
    for (int m = 0; m < KeyState.METRICS; m++) {
      if (r.isNullAt(iRates[m])) {
        continue;
      }
      double v = r.getDouble(iRates[m]);
      double old = k.max[m][slot];
      k.max[m][slot] = Double.isNaN(old) ? v : Math.max(old, v);
      if (k.sketches != null) {
        k.sketches[m][slot].add(v, logGamma, maxBins);
      }
    }
    String role = r.isNullAt(iRole) ? null : r.getString(iRole);
    if (role != null && !r.isNullAt(iBroker)) {
      int broker = r.getInt(iBroker);
      if (role.equals("leader")) {
        if (ms >= k.leaderMs) {
          k.leaderMs = ms;
          k.leaderId = broker;
        }
      } else {
        k.followers.merge(broker, ms, Math::max);
      }
    }
    if (ms >= k.lastEventMs) { // the latest report so far speaks for the broker
      k.replicasCovered = r.isNullAt(iCovered) ? null : r.getInt(iCovered);
      k.failureReason = r.isNullAt(iReason) ? null : r.getString(iReason);
    }
    k.lastEventMs = Math.max(k.lastEventMs, ms);
  }

  private static void setTimeout(GroupState<Row> state, long ms) {
    long floor;
    try {
      floor = state.getCurrentWatermarkMs() + 1;
    } catch (UnsupportedOperationException e) {
      return; // a batch query: no watermark, no timeouts
    }
    state.setTimeoutTimestamp(Math.max(ms, floor));
  }

  private Double statistic(KeyState k, int metric) {
    if (k.sketches != null) {
      Sketch window = new Sketch();
      for (Sketch s : k.sketches[metric]) {
        window.merge(s, Integer.MAX_VALUE); // a window's sketch is not kept: no cap
      }
      return window.quantile(quantile, gamma);
    }
    double best = Double.NaN;
    for (double v : k.max[metric]) {
      if (!Double.isNaN(v) && (Double.isNaN(best) || v > best)) {
        best = v;
      }
    }
    return Double.isNaN(best) ? null : best;
  }

  private Row loadRow(Row first, KeyState k, long windowStart, long windowEnd) {
    long samples = 0;
    long reports = 0;
    for (int s = 0; s < buckets; s++) {
      samples += k.samples[s];
      reports += k.reports[s];
    }
    Integer leader = k.leaderId >= 0 && k.leaderMs >= windowStart ? k.leaderId : null;
    Integer[] followers = k.followers.keySet().toArray(new Integer[0]);
    return RowFactory.create(
        first.getString(iKind),
        first.getString(iKey),
        first.isNullAt(iTopic) ? null : first.getString(iTopic),
        first.isNullAt(iPartition) ? null : first.getInt(iPartition),
        windowStart,
        windowEnd,
        statistic(k, 0),
        statistic(k, 1),
        statistic(k, 2),
        samples,
        reports,
        k.lastEventMs,
        leader,
        followers,
        k.replicasCovered,
        k.failureReason,
        null,
        null,
        null);
  }

  private Row dlqRow(Row r) {
    return RowFactory.create(
        "dlq",
        null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
        r.get(iDlqKey),
        r.get(iDlqValue),
        r.get(iDlqHeaders));
  }
}
