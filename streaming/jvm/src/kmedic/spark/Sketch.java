package kmedic.spark;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A mergeable quantile sketch with relative accuracy (the DDSketch idea): a value v > 0 falls
 * in bin ceil(log(v) / log(gamma)), gamma = (1 + a) / (1 - a), and a quantile read back from
 * its bin is within a factor (1 +- a) of a value of that rank. Zeros have their own count.
 *
 * <p>Bounded: past maxBins the two lowest bins merge, so the error stays a for every quantile
 * above the merged mass (the high percentiles kmedic plans for) and only the lowest grow coarse.
 * Merging two sketches adds their counts bin by bin: the sketch of a window is the merge of
 * its buckets' sketches.
 */
final class Sketch {
  private int[] bins = new int[0];
  private long[] counts = new long[0];
  private long zeros;

  long count() {
    long n = zeros;
    for (long c : counts) {
      n += c;
    }
    return n;
  }

  void add(double value, double logGamma, int maxBins) {
    if (value <= 0) {
      zeros++;
      return;
    }
    addBin((int) Math.ceil(Math.log(value) / logGamma), 1, maxBins);
  }

  void merge(Sketch other, int maxBins) {
    zeros += other.zeros;
    for (int i = 0; i < other.bins.length; i++) {
      addBin(other.bins[i], other.counts[i], maxBins);
    }
  }

  private void addBin(int bin, long count, int maxBins) {
    int at = Arrays.binarySearch(bins, bin);
    if (at >= 0) {
      counts[at] += count;
      return;
    }
    int insert = -at - 1;
    int[] nb = new int[bins.length + 1];
    long[] nc = new long[counts.length + 1];
    System.arraycopy(bins, 0, nb, 0, insert);
    System.arraycopy(counts, 0, nc, 0, insert);
    nb[insert] = bin;
    nc[insert] = count;
    System.arraycopy(bins, insert, nb, insert + 1, bins.length - insert);
    System.arraycopy(counts, insert, nc, insert + 1, counts.length - insert);
    bins = nb;
    counts = nc;
    if (bins.length > maxBins) {
      // The lowest bin joins the next one up: only the lowest quantiles lose accuracy.
      counts[1] += counts[0];
      bins = Arrays.copyOfRange(bins, 1, bins.length);
      counts = Arrays.copyOfRange(counts, 1, counts.length);
    }
  }

  /** The value at quantile q (0..1), or null for an empty sketch. */
  Double quantile(double q, double gamma) {
    long n = count();
    if (n == 0) {
      return null;
    }
    double rank = q * (n - 1);
    long seen = zeros;
    if (seen > rank) {
      return 0.0;
    }
    for (int i = 0; i < bins.length; i++) {
      seen += counts[i];
      if (seen > rank) {
        return 2.0 * Math.pow(gamma, bins[i]) / (gamma + 1.0);
      }
    }
    return 2.0 * Math.pow(gamma, bins[bins.length - 1]) / (gamma + 1.0);
  }

  int bytes() {
    return 8 + 4 + bins.length * 12;
  }

  void write(ByteBuffer out) {
    out.putLong(zeros);
    out.putInt(bins.length);
    for (int i = 0; i < bins.length; i++) {
      out.putInt(bins[i]);
      out.putLong(counts[i]);
    }
  }

  static Sketch read(ByteBuffer in) {
    Sketch s = new Sketch();
    s.zeros = in.getLong();
    int n = in.getInt();
    s.bins = new int[n];
    s.counts = new long[n];
    for (int i = 0; i < n; i++) {
      s.bins[i] = in.getInt();
      s.counts[i] = in.getLong();
    }
    return s;
  }
}
