package dev.fencedwrites.devtools.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * {@code fence chaos}'s HTML page: one lane per key with who held its lease when, each stall of a writer past its
 * lease, each stale write and where it was stopped; the nemesis's faults on the top lane; the text report below. One
 * self-contained file (inline SVG, no script), with a tooltip on every mark.
 */
final class ChaosTimeline {
    private static final int WIDTH = 1100;
    private static final int LEFT = 130;
    private static final int LANE = 26;

    private ChaosTimeline() {
    }

    static String html(ChaosRun.Outcome outcome, Map<String, String> fates, String textReport) {
        long from = outcome.startedMillis();
        long to = Math.max(outcome.stoppedMillis(), from + 1);
        WriterLedger ledger = outcome.ledger();
        List<String> keys = new ArrayList<>(new TreeSet<>(ledger.acquired().stream().map(WriterLedger.Acquired::key).toList()));
        // the network faults overlap each other and the rest: a lane for each kind, under the other faults' lane
        List<Fault> links = outcome.settings().faults().stream().filter(Fault::network).sorted().toList();
        int height = LANE * (keys.size() + links.size() + 2) + 30;
        StringBuilder svg = new StringBuilder();
        svg.append("<svg xmlns='http://www.w3.org/2000/svg' width='").append(LEFT + WIDTH + 20).append("' height='")
                .append(height).append("' font-family='sans-serif' font-size='11'>\n");
        Scale x = new Scale(from, to);
        for (int s = 0; s <= (to - from) / 1000; s += Math.max(1, (int) ((to - from) / 1000 / 12))) {
            int px = x.at(from + s * 1000L);
            svg.append(String.format("<line x1='%d' y1='14' x2='%d' y2='%d' stroke='#eee'/><text x='%d' y='10'>%d s</text>%n", px,
                    px, height, px - 8, s));
        }
        lane(svg, 0, "faults");
        for (int l = 0; l < links.size(); l++) {
            lane(svg, l + 1, links.get(l).option());
        }
        for (Nemesis.Event event : outcome.events()) {
            int at = event.fault().network() ? links.indexOf(event.fault()) + 1 : 0;
            rect(svg, x, event.startMillis(), Math.max(event.endMillis(), event.startMillis() + 300), 20 + LANE * at, LANE - 8,
                    colour(event.fault()), event.fault().option() + ": " + event.detail());
        }
        for (int k = 0; k < keys.size(); k++) {
            String key = keys.get(k);
            int y = 20 + LANE * (k + 1 + links.size());
            lane(svg, k + 1 + links.size(), key);
            holdings(svg, x, y, key, ledger, to);
            for (WriterFleet.Resumed stall : outcome.resumed()) {
                if (stall.key().equals(key)) {
                    rect(svg, x, stall.stoppedMillis(), stall.resumedMillis(), y + LANE - 12, 5, "#333",
                            stall.process() + " stopped past its lease (token " + stall.token() + ") for "
                                    + (stall.resumedMillis() - stall.stoppedMillis()) + " ms; "
                                    + (stall.tookOver() ? "another writer took the key over meanwhile" : "nobody took over"));
                }
            }
            for (WriterLedger.Ack ack : ledger.stalledWrites()) {
                if (ack.key().equals(key)) {
                    String fate = fates.getOrDefault(ack.partition() + "@" + ack.offset(), "ACCEPTED");
                    svg.append(String.format("<circle cx='%d' cy='%d' r='5' fill='%s'><title>%s</title></circle>%n",
                            x.at(ack.millis()), y + LANE / 2 - 2, fate.equals("ACCEPTED") ? "#e69500" : "#c00000",
                            escape((fate.equals("ACCEPTED") ? "stalled write, not stale, by " : "stale write by ")
                                    + ack.writer() + ": token " + ack.token() + "." + ack.seq() + " at input "
                                    + ack.partition() + "@" + ack.offset() + " -> " + fate
                                    + (fate.equals("ACCEPTED")
                                            ? " (nobody took the key over while it was stopped: its lease was still the newest)"
                                            : " (stopped by the enforcer)"))));
                }
            }
        }
        svg.append("</svg>\n");
        return page(outcome, svg, textReport);
    }

    private static String page(ChaosRun.Outcome outcome, CharSequence svg, String textReport) {
        return "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>fence chaos, seed " + outcome.settings().seed()
                + "</title></head>\n<body style='font-family:sans-serif'>\n<h1>fence chaos, seed " + outcome.settings().seed()
                + "</h1>\n<p>Each lane is a key: coloured bars are lease holdings (one colour per writer), black bars a writer "
                + "process stopped past its lease, red dots stale writes the enforcer stopped, orange dots stalled writes "
                + "accepted because no one had taken the key over. The top lanes are the nemesis: process faults, then one "
                + "lane per network fault (cut or slow links, which overlap). Hover for details.</p>\n"
                + legend(outcome) + svg + "<pre>" + escape(textReport) + "</pre>\n</body></html>\n";
    }

    /** The colour of a fault's bars on the nemesis lane. */
    private static String colour(Fault fault) {
        return "hsl(" + (fault.ordinal() * 47) % 360 + ",70%,55%)";
    }

    /** A line naming each chosen fault beside its colour. */
    private static String legend(ChaosRun.Outcome outcome) {
        StringBuilder legend = new StringBuilder("<p>");
        for (Fault fault : outcome.settings().faults()) {
            legend.append(String.format("<span style='display:inline-block;width:12px;height:12px;background:%s'></span> %s "
                    + "&nbsp; ", colour(fault), escape(fault.option())));
        }
        return legend.append("</p>\n").toString();
    }

    private static void holdings(StringBuilder svg, Scale x, int y, String key, WriterLedger ledger, long to) {
        for (WriterLedger.Acquired held : ledger.acquired()) {
            if (!held.key().equals(key)) {
                continue;
            }
            long end = ledger.released().stream().filter(r -> r.lease() == held.lease()).mapToLong(WriterLedger.Released::millis)
                    .min().orElse(to);
            long lost = ledger.lost().stream().filter(l -> l.lease() == held.lease()).mapToLong(WriterLedger.Lost::millis).min()
                    .orElse(end);
            int hue = Math.floorMod(held.writer().hashCode(), 360);
            rect(svg, x, held.millis(), Math.min(end, lost), y + 2, LANE - 14, "hsl(" + hue + ",60%,70%)",
                    held.writer() + " held " + key + " with token " + held.token() + " (lease " + held.lease() + ")"
                            + (lost < end ? ", lost it after " + (lost - held.millis()) + " ms" : ""));
        }
    }

    private static void lane(StringBuilder svg, int index, String name) {
        int y = 20 + LANE * index;
        svg.append(String.format("<text x='4' y='%d'>%s</text><line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#ccc'/>%n",
                y + LANE / 2, escape(name), LEFT, y + LANE - 2, LEFT + WIDTH, y + LANE - 2));
    }

    private static void rect(StringBuilder svg, Scale x, long start, long end, int y, int h, String fill, String title) {
        int x0 = x.at(start);
        svg.append(String.format("<rect x='%d' y='%d' width='%d' height='%d' fill='%s'><title>%s</title></rect>%n", x0, y,
                Math.max(2, x.at(end) - x0), h, fill, escape(title)));
    }

    static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;");
    }

    /** Wall-clock milliseconds to x pixels. */
    private record Scale(long from, long to) {
        int at(long millis) {
            return LEFT + (int) (Math.max(0, Math.min(millis, to) - from) * WIDTH / (to - from));
        }
    }
}
