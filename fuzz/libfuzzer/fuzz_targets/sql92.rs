#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    stellmq_fuzz::sql92::sql92(data);
});
