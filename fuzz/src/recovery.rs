//! CommitLog recovery over arbitrary segment bytes: the scan that decides where the valid
//! log ends must answer for any bytes, and be stable (what it kept rescans the same).

use stellmq_store::recovery::{scan_segment_bytes, SegmentScan};

/// Input: the bytes of one segment (its base taken as 0), padded to a 4 KiB multiple.
pub fn recovery(data: &[u8]) -> bool {
    let mut segment = data.to_vec();
    segment.resize(data.len().div_ceil(4096).max(1) * 4096, 0);
    let mut accepted = false;
    for check_crc in [true, false] {
        match scan_segment_bytes(&segment, 0, check_crc) {
            SegmentScan::Complete => accepted = true,
            SegmentScan::EndsAt { pos, .. } => {
                assert!(pos <= segment.len());
                // What recovery keeps is a valid log that ends exactly there.
                let mut kept = segment[..pos].to_vec();
                kept.resize(segment.len(), 0);
                assert_eq!(
                    scan_segment_bytes(&kept, 0, check_crc),
                    SegmentScan::EndsAt { pos, reason: None },
                    "the kept part rescans to the same end"
                );
                accepted |= pos > 0;
            }
        }
    }
    accepted
}
