// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;

/**
 * The final audit of one topic on Kafka's own Java consumer (validation/audit.py starts it):
 * every partition from its log start to its end, by assign (no group, no commits). Read
 * committed, the end is the last stable offset and aborted transactions' records are skipped,
 * as Kafka's own consumer does it.
 *
 * <p>stdin: the consumer's properties, an empty line, the topic, the timeout in ms. stdout,
 * tab-separated: {@code r partition offset timestamp value producer seq origin} a record (the
 * last three from dcdrill's headers, empty without them), {@code d} the end, or {@code x why}.
 */
public final class AuditBridge {
    private static final String[] HEADERS = {"dcdrill-producer", "dcdrill-seq", "dcdrill-origin"};

    public static void main(String[] args) throws Exception {
        PrintStream out = Bridge.answers();
        BufferedReader in = Bridge.stdin();
        Properties props = Bridge.consumerProperties(in);
        String topic = in.readLine();
        long timeoutMs = Long.parseLong(in.readLine().trim());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            String failed = audit(consumer, topic, timeoutMs, out);
            out.println(failed == null ? "d" : "x\t" + failed);
        }
        out.flush();
    }

    private static String audit(KafkaConsumer<byte[], byte[]> consumer, String topic, long timeoutMs, PrintStream out)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        List<PartitionInfo> parts = null;
        while ((parts == null || parts.isEmpty()) && System.currentTimeMillis() < deadline) {
            try {
                parts = consumer.partitionsFor(topic, Duration.ofSeconds(5));
            } catch (TimeoutException e) {
                parts = null;
            }
            if (parts == null || parts.isEmpty()) {
                Thread.sleep(1000);
            }
        }
        if (parts == null || parts.isEmpty()) {
            return "topic '" + topic + "' not found within " + timeoutMs / 1000 + "s";
        }
        List<TopicPartition> tps = new ArrayList<>();
        parts.forEach(p -> tps.add(new TopicPartition(topic, p.partition())));
        consumer.assign(tps);
        Map<TopicPartition, Long> start = null;
        Map<TopicPartition, Long> end = null;
        while (end == null) {
            try {
                start = consumer.beginningOffsets(tps, Duration.ofSeconds(10));
                end = consumer.endOffsets(tps, Duration.ofSeconds(10));
            } catch (TimeoutException e) {  // a partition without a leader
                if (System.currentTimeMillis() > deadline) {
                    return "cannot read log start/end offsets of " + topic + ": " + e.getMessage()
                        + " (a partition is probably offline)";
                }
            }
        }
        consumer.seekToBeginning(tps);
        Set<TopicPartition> remaining = new HashSet<>();
        Map<TopicPartition, Long> progress = new HashMap<>();
        for (TopicPartition tp : tps) {
            if (end.get(tp) > start.get(tp)) {
                remaining.add(tp);
            }
            progress.put(tp, System.currentTimeMillis());
        }
        while (!remaining.isEmpty()) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                progress.put(tp, System.currentTimeMillis());
                if (r.offset() >= end.get(tp)) {
                    continue;
                }
                String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
                out.append("r\t").append(String.valueOf(r.partition())).append('\t')
                    .append(String.valueOf(r.offset())).append('\t').append(String.valueOf(r.timestamp()))
                    .append('\t').append(text(value));
                for (String name : HEADERS) {
                    Header h = r.headers().lastHeader(name);
                    out.append('\t').append(h == null ? "" : text(new String(h.value(), StandardCharsets.UTF_8)));
                }
                out.append('\n');
            }
            for (TopicPartition tp : new ArrayList<>(remaining)) {
                long position = consumer.position(tp);
                if (position >= end.get(tp)) {
                    remaining.remove(tp);
                } else if (System.currentTimeMillis() - progress.get(tp) > timeoutMs) {
                    return "partition " + tp + " made no progress for " + timeoutMs / 1000 + "s (at " + position
                        + " of " + end.get(tp) + "): is it offline?";
                }
            }
        }
        return null;
    }

    private static String text(String s) {
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }
}
