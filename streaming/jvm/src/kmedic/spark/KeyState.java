package kmedic.spark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.TreeMap;

/**
 * One key's state: a ring of the last n buckets (each a slide long) and the latest facts.
 *
 * <p>Bucket b (event time floor(ms / slide)) lives in slot b mod n. The ring ends at the newest
 * bucket seen; a report for a newer one clears the slots it passes, and a report older than the
 * ring is outside every window the key can still publish, so it is dropped. The window the key
 * publishes is the whole ring: the n buckets ending with the one that holds its latest report.
 */
final class KeyState {
  static final int METRICS = 3;

  final int n;
  long ringEnd = Long.MIN_VALUE;
  long lastEventMs = Long.MIN_VALUE;
  final long[] reports;
  final long[] samples;
  // [metric][slot]: the bucket's maximum (NaN: nothing measured), or its sketch.
  final double[][] max;
  final Sketch[][] sketches;
  int leaderId = -1;
  long leaderMs = Long.MIN_VALUE;
  // Follower broker -> the event time it last reported the replica.
  final TreeMap<Integer, Long> followers = new TreeMap<>();
  Integer replicasCovered;
  String failureReason;

  KeyState(int n, boolean withSketches) {
    this.n = n;
    reports = new long[n];
    samples = new long[n];
    max = new double[METRICS][n];
    for (double[] m : max) {
      Arrays.fill(m, Double.NaN);
    }
    sketches = withSketches ? new Sketch[METRICS][n] : null;
    if (sketches != null) {
      for (Sketch[] row : sketches) {
        for (int i = 0; i < n; i++) {
          row[i] = new Sketch();
        }
      }
    }
  }

  /** The slot for bucket b after moving the ring forward to it, or -1 if b is too old. */
  int slotFor(long bucket) {
    if (ringEnd == Long.MIN_VALUE || bucket - ringEnd >= n) {
      for (int s = 0; s < n; s++) {
        clear(s);
      }
      ringEnd = bucket;
    } else if (bucket > ringEnd) {
      for (long b = ringEnd + 1; b <= bucket; b++) {
        clear((int) Math.floorMod(b, (long) n));
      }
      ringEnd = bucket;
    } else if (ringEnd - bucket >= n) {
      return -1;
    }
    return (int) Math.floorMod(bucket, (long) n);
  }

  private void clear(int slot) {
    reports[slot] = 0;
    samples[slot] = 0;
    for (int m = 0; m < METRICS; m++) {
      max[m][slot] = Double.NaN;
      if (sketches != null) {
        sketches[m][slot] = new Sketch();
      }
    }
  }

  byte[] toBytes() {
    int size = 4 + 8 * 3 + 4 + 1 + 4 + 4 + n * (16 + METRICS * 8) + 4 + followers.size() * 12;
    byte[] reason = failureReason == null ? null : failureReason.getBytes(StandardCharsets.UTF_8);
    size += reason == null ? 0 : reason.length;
    if (sketches != null) {
      for (Sketch[] row : sketches) {
        for (Sketch s : row) {
          size += s.bytes();
        }
      }
    }
    ByteBuffer out = ByteBuffer.allocate(size);
    out.putInt(n);
    out.putLong(ringEnd);
    out.putLong(lastEventMs);
    out.putLong(leaderMs);
    out.putInt(leaderId);
    out.put((byte) (sketches != null ? 1 : 0));
    out.putInt(replicasCovered == null ? Integer.MIN_VALUE : replicasCovered);
    out.putInt(reason == null ? -1 : reason.length);
    if (reason != null) {
      out.put(reason);
    }
    for (int s = 0; s < n; s++) {
      out.putLong(reports[s]);
      out.putLong(samples[s]);
      for (int m = 0; m < METRICS; m++) {
        out.putDouble(max[m][s]);
      }
    }
    out.putInt(followers.size());
    followers.forEach(
        (broker, ms) -> {
          out.putInt(broker);
          out.putLong(ms);
        });
    if (sketches != null) {
      for (Sketch[] row : sketches) {
        for (Sketch s : row) {
          s.write(out);
        }
      }
    }
    return Arrays.copyOf(out.array(), out.position());
  }

  static KeyState fromBytes(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    int n = in.getInt();
    long ringEnd = in.getLong();
    long lastEventMs = in.getLong();
    long leaderMs = in.getLong();
    int leaderId = in.getInt();
    boolean withSketches = in.get() == 1;
    KeyState k = new KeyState(n, withSketches);
    k.ringEnd = ringEnd;
    k.lastEventMs = lastEventMs;
    k.leaderMs = leaderMs;
    k.leaderId = leaderId;
    int covered = in.getInt();
    k.replicasCovered = covered == Integer.MIN_VALUE ? null : covered;
    int reasonLength = in.getInt();
    if (reasonLength >= 0) {
      byte[] reason = new byte[reasonLength];
      in.get(reason);
      k.failureReason = new String(reason, StandardCharsets.UTF_8);
    }
    for (int s = 0; s < n; s++) {
      k.reports[s] = in.getLong();
      k.samples[s] = in.getLong();
      for (int m = 0; m < METRICS; m++) {
        k.max[m][s] = in.getDouble();
      }
    }
    int followerCount = in.getInt();
    for (int i = 0; i < followerCount; i++) {
      int broker = in.getInt();
      k.followers.put(broker, in.getLong());
    }
    if (withSketches) {
      for (int m = 0; m < METRICS; m++) {
        for (int s = 0; s < n; s++) {
          k.sketches[m][s] = Sketch.read(in);
        }
      }
    }
    return k;
  }
}
