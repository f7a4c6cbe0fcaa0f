//! The animations section: play, pause, step and speed over the frames perfexpert computed
//! per time window (process states, the wait-time and traffic matrices of the window, each
//! node's share of the messages sent so far as a Kiviat diagram). `views.js` draws the
//! frames and fills the text alternative (the frame's numbers) as they change.

use super::secs;
use super::timeline::{legend, order_select};
use crate::report::Report;
use std::fmt::Write as _;

/// The `animations` section.
pub fn section(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(v) = &r.views else {
        return Ok(());
    };
    let frames = v.windows.len().saturating_sub(1);
    let phases = v.window_phase.iter().max().copied().unwrap_or(0);
    write!(
        h,
        "<h2>The run, animated</h2>\n<p>{frames} frames: the run cut into equal windows{}. \
         Each frame shows what every process does most in the window, who waited for whom \
         (late senders; the last to enter a collective) and who sent how much to whom in it, \
         and each node's share of the messages sent so far.</p>\n",
        if phases > 1 {
            format!(" and again at the phase boundaries ({} phases)", phases)
        } else {
            String::new()
        }
    )?;
    write!(
        h,
        "<div class=\"ctl\"><button id=\"an-play\">play</button><button id=\"an-back\">step ◀\
         </button><button id=\"an-step\">step ▶</button><label>speed <select id=\"an-speed\">\
         <option value=\"1\">1 frame/s</option><option value=\"2\">2 frames/s</option>\
         <option value=\"5\" selected>5 frames/s</option><option value=\"10\">10 frames/s\
         </option><option value=\"20\">20 frames/s</option></select></label>\
         <input type=\"range\" id=\"an-frame\" min=\"0\" max=\"{}\" value=\"0\" \
         aria-label=\"frame\"> <label>colour scale <input type=\"range\" id=\"an-gain\" \
         min=\"1\" max=\"100\" value=\"100\" aria-label=\"colour scale, percent of the \
         largest value\"></label> {} <span id=\"an-label\" class=\"muted\"></span></div>\n",
        frames.saturating_sub(1),
        order_select("an-order")
    )?;
    legend(v, h)?;
    write!(
        h,
        "<div class=\"grid\">\
         <figure><figcaption>Process states</figcaption><canvas id=\"an-states\" width=\"250\" \
         height=\"250\" role=\"img\"></canvas></figure>\
         <figure><figcaption>Wait time: row waits for column</figcaption><canvas id=\"an-waits\" \
         width=\"250\" height=\"250\" role=\"img\"></canvas></figure>\
         <figure><figcaption>Bytes: row sends to column</figcaption><canvas id=\"an-traffic\" \
         width=\"250\" height=\"250\" role=\"img\"></canvas></figure>\
         <figure><figcaption>Messages sent so far, per node</figcaption><svg id=\"an-kiviat\" \
         width=\"250\" height=\"250\" role=\"img\"></svg></figure></div>\n\
         <details open><summary>This frame's numbers</summary><div id=\"an-text\"></div></details>\n"
    )?;
    write!(
        h,
        "<p class=\"muted\">The colour scale slider (while paused) sets the value drawn darkest, \
         as a share of the largest in any frame. The run's {} in {frames} frames; the first \
         frame ends at {}.</p>\n",
        secs(v.duration_s),
        secs(v.windows.get(1).copied().unwrap_or(0.0))
    )?;
    Ok(())
}
