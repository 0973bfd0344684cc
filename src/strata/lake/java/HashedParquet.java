package strata.spark;

import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.AccumulatorV2;
import scala.collection.immutable.Seq;

/**
 * Spark's Parquet files, written as {@code parquet} writes them, summing a hash of each
 * row as the writer takes it.
 *
 * <p>The hash is the SQL expression given as the {@code strata.hash.sql} option, over the
 * written columns by name, compiled by Spark into each task's writer. Per write it keeps
 * the row count and the hash's sum in three 21-bit slices (as {@code strata.lake.rowhash}
 * sums it), in an accumulator: Spark counts a task's share once, however often the task
 * ran. {@link #take} hands them over under the {@code strata.hash.id} the write named.
 * Observing the same sums from the frame ({@code Dataset.observe}) takes the rows out of
 * the write's generated code and cost about twice as much.
 */
public class HashedParquet extends ParquetFileFormat {
  private static final Map<String, Sums> WRITES = new ConcurrentHashMap<>();
  private static final int CHUNK = 21;
  private static final long LOW = (1L << CHUNK) - 1;

  /** The count and slice sums of the write named {@code id}, forgotten; null if unknown. */
  public static long[] take(String id) {
    Sums sums = WRITES.remove(id);
    return sums == null ? null : sums.value();
  }

  @Override
  public OutputWriterFactory prepareWrite(
      SparkSession session,
      Job job,
      scala.collection.immutable.Map<String, String> options,
      StructType dataSchema) {
    OutputWriterFactory parquet = super.prepareWrite(session, job, options, dataSchema);
    String id = options.get("strata.hash.id").get();
    LogicalPlan analyzed =
        session
            .createDataFrame(Collections.<Row>emptyList(), dataSchema)
            .selectExpr(options.get("strata.hash.sql").get())
            .queryExecution()
            .analyzed();
    // What the optimizer would run in place of expressions that only stand for others
    // (to_json is one); an optimized plan over no rows would be no plan at all.
    Project hash = (Project) ReplaceExpressions$.MODULE$.apply(analyzed);
    @SuppressWarnings("unchecked")
    Seq<Expression> exprs = (Seq<Expression>) (Seq<?>) hash.projectList();
    Sums sums = new Sums();
    session.sparkContext().register(sums, "strata-row-hash");
    WRITES.put(id, sums);
    return new Factory(parquet, exprs, hash.child().output(), sums);
  }

  private static final class Factory extends OutputWriterFactory {
    private final OutputWriterFactory parquet;
    private final Seq<Expression> hash;
    private final Seq<Attribute> input;
    private final Sums sums;

    Factory(OutputWriterFactory parquet, Seq<Expression> hash, Seq<Attribute> input, Sums sums) {
      this.parquet = parquet;
      this.hash = hash;
      this.input = input;
      this.sums = sums;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
      return parquet.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
      OutputWriter file = parquet.newInstance(path, dataSchema, context);
      return new Writer(file, UnsafeProjection.create(hash, input), sums);
    }
  }

  private static final class Writer extends OutputWriter {
    private final OutputWriter file;
    private final UnsafeProjection hash;
    private final Sums sums;
    private final long[] kept = new long[4]; // count, then the three slices' sums

    Writer(OutputWriter file, UnsafeProjection hash, Sums sums) {
      this.file = file;
      this.hash = hash;
      this.sums = sums;
    }

    @Override
    public void write(InternalRow row) {
      long h = hash.apply(row).getLong(0);
      kept[0]++;
      kept[1] += h & LOW;
      kept[2] += (h >>> CHUNK) & LOW;
      kept[3] += h >> (2 * CHUNK); // signed, as shiftright in SQL
      file.write(row);
    }

    @Override
    public void close() {
      file.close();
      sums.add(kept);
    }

    @Override
    public String path() {
      return file.path();
    }
  }

  /** The count and slice sums of one write's rows. */
  public static final class Sums extends AccumulatorV2<long[], long[]> {
    private final long[] total = new long[4];

    @Override
    public boolean isZero() {
      return Arrays.stream(total).allMatch(v -> v == 0);
    }

    @Override
    public Sums copy() {
      Sums out = new Sums();
      out.add(total);
      return out;
    }

    @Override
    public void reset() {
      Arrays.fill(total, 0);
    }

    @Override
    public void add(long[] values) {
      for (int i = 0; i < total.length; i++) {
        total[i] += values[i];
      }
    }

    @Override
    public void merge(AccumulatorV2<long[], long[]> other) {
      add(other.value());
    }

    @Override
    public long[] value() {
      return total.clone();
    }
  }
}
