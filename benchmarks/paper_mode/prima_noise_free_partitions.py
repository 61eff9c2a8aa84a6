import sys, numpy as np
from dpadapt.bench.common import cached_pair
from dpadapt.alignment import prima, covariance as cov
from dpadapt.alignment.coral import coral_matrix
from dpadapt.privacy import accounting
from dpadapt.alignment.dp_training import dpsgd_schedule
from sklearn.linear_model import LogisticRegression
for s,t in [("dslr","webcam"),("webcam","dslr")]:
    pair = cached_pair("decaf6", s, t); ys, yt = pair.ys, pair.yt_test
    q, steps = dpsgd_schedule(len(ys), 25, 1)
    for E in [1,2,5,10,20,50]:
        ev = accounting.poisson_gaussian_event(4.0, q, steps*E)
        print(s,t,"z=4 E",E,"eps",round(accounting.epsilon(ev,1e-5),3))
    Xs = prima.preprocess(pair.Xs, log_counts=False, row_norm=1, privacy_mode="paper")
    Xt = prima.preprocess(pair.Xt, log_counts=False, row_norm=1, privacy_mode="paper")
    print(s,t,"full LR", LogisticRegression(max_iter=3000).fit(Xs, ys).score(Xt, yt))
    for p in [128, 295, 512, 1024]:
        parts = cov.random_partition(4096, p, np.random.default_rng(0))
        Cs = cov.block_second_moments(Xs, parts); Ct = cov.block_second_moments(Xt, parts)
        V = np.zeros((len(yt),10)); accs=[]
        for i, idx in enumerate(parts):
            H = coral_matrix(Cs[i], Ct[i], 1.0, 1.0)
            pr = LogisticRegression(max_iter=1000).fit(Xs[:, idx] @ H, ys).predict(Xt[:, idx])
            V[np.arange(len(yt)), pr] += 1; accs.append(np.mean(pr==yt))
        print(s,t,"random p",p,"m",len(parts),"vote",np.mean(V.argmax(1)==yt),"mean head",np.mean(accs), flush=True)
