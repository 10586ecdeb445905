//! Spike patterns: validation names the spike, sorting, binning keeps counts, round trips.

use ndarray::array;
use reservoir_core::spikes::{Spike, SpikePattern};

fn spike(neuron_id: u32, time_ms: f64) -> Spike {
    Spike {
        neuron_id,
        time_ms,
        amplitude: 1.0,
    }
}

#[test]
fn patterns_are_sorted_by_time_then_neuron() {
    let p = SpikePattern::new(vec![spike(2, 5.0), spike(0, 1.0), spike(1, 5.0)], 3, 10.0).unwrap();
    let order: Vec<(u32, f64)> = p
        .spikes()
        .iter()
        .map(|s| (s.neuron_id, s.time_ms))
        .collect();
    assert_eq!(order, vec![(0, 1.0), (1, 5.0), (2, 5.0)]);
}

#[test]
fn invalid_spikes_are_errors_naming_the_spike() {
    for (spikes, needle) in [
        (vec![spike(0, 1.0), spike(3, 2.0)], "spike 1: neuron_id 3"),
        (vec![spike(0, 10.0)], "spike 0: time_ms 10"),
        (vec![spike(0, -0.5)], "spike 0: time_ms -0.5"),
        (
            vec![Spike {
                neuron_id: 0,
                time_ms: 1.0,
                amplitude: f64::NAN,
            }],
            "spike 0: amplitude",
        ),
    ] {
        let err = SpikePattern::new(spikes, 3, 10.0).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
    assert!(SpikePattern::new(vec![], 3, 0.0).is_err());
    assert!(SpikePattern::new(vec![], 3, f64::INFINITY).is_err());
}

#[test]
fn binning_keeps_counts_and_amplitudes() {
    let spikes = vec![
        spike(0, 0.2),
        spike(0, 0.7),
        spike(1, 1.0),
        Spike {
            neuron_id: 1,
            time_ms: 2.5,
            amplitude: -1.0,
        },
    ];
    let p = SpikePattern::new(spikes, 2, 3.0).unwrap();
    assert_eq!(
        p.to_input_matrix(1.0).unwrap(),
        array![[2.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    );
    assert_eq!(p.n_bins(0.7).unwrap(), 5);
    assert!(p.to_input_matrix(0.0).is_err());
}

#[test]
fn matrix_round_trip_lands_every_spike_in_its_step() {
    // 166 · 0.1 / 0.1 is 165.99999999999997 in f64: binning must still put it in step 166.
    let mut trains = ndarray::Array2::zeros((300, 4));
    for (t, n) in [(0, 0), (166, 1), (299, 3), (57, 2), (57, 3)] {
        trains[(t, n)] = 1.0;
    }
    let pattern = SpikePattern::from_matrix(&trains, 0.1).unwrap();
    assert_eq!(pattern.spikes().len(), 5);
    assert_eq!(pattern.to_input_matrix(0.1).unwrap(), trains);
}

#[test]
fn serde_round_trip_validates() {
    let p = SpikePattern::new(vec![spike(1, 2.0), spike(0, 0.5)], 2, 5.0).unwrap();
    let text = toml::to_string(&p).unwrap();
    let back: SpikePattern = toml::from_str(&text).unwrap();
    assert_eq!(back, p);
    // Deserialising goes through the same validation as `SpikePattern::new`.
    let bad = text.replace("n_neurons = 2", "n_neurons = 1");
    assert_ne!(bad, text);
    let err = toml::from_str::<SpikePattern>(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("neuron_id 1"), "{err}");
    // and sorts: spikes given out of order come back sorted by time.
    let unsorted = "n_neurons = 2\nduration_ms = 5.0\n[[spikes]]\nneuron_id = 1\ntime_ms = 2.0\namplitude = 1.0\n[[spikes]]\nneuron_id = 0\ntime_ms = 0.5\namplitude = 1.0\n";
    assert_eq!(toml::from_str::<SpikePattern>(unsorted).unwrap(), p);
}
