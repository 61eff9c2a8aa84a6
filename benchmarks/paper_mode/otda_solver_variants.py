import numpy as np, ot, warnings, time
warnings.simplefilter("ignore")
from dpadapt.bench.common import cached_pair
from dpadapt.transport.coupling import normalised_cost, barycentric_map, squared_distances
from dpadapt.transport.dpot import draw_projection
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.pipeline import make_pipeline
for s,t in [("dslr","webcam"),("webcam","dslr")]:
    pair = cached_pair("decaf6", s, t); Xs, ys, Xt, yt = np.asarray(pair.Xs,float), pair.ys, np.asarray(pair.Xt,float), pair.yt_test
    ns, nt = len(ys), len(Xt); a, b = np.full(ns,1/ns), np.full(nt,1/nt)
    def clf(Xi, yi, scale=True):
        m = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)) if scale else LogisticRegression(max_iter=3000)
        return m.fit(Xi, yi).score(Xt, yt)
    print(s,t,"source-only", clf(Xs,ys), flush=True)
    M = draw_projection(4096, 410, 0, "jl")
    for proj in [False, True]:
        A, B = (Xs@M, Xt@M) if proj else (Xs, Xt)
        C = ((A[:,None,:]-B[None,:,:])**2).sum(-1)
        Cn = normalised_cost(C); Cm = C/C.max()
        res = {}
        res["emd"] = ot.emd(a,b,Cn)
        res["gl dc/max 0.01,0.1"] = ot.da.sinkhorn_l1l2_gl(a, ys, b, Cn, 0.01, eta=0.1)
        res["gl C/max 0.01,0.1"] = ot.da.sinkhorn_l1l2_gl(a, ys, b, Cm, 0.01, eta=0.1)
        res["gl C/max 0.001,0.1"] = ot.da.sinkhorn_l1l2_gl(a, ys, b, Cm, 0.001, eta=0.1)
        res["sinkhorn C/max 0.01"] = ot.sinkhorn(a,b,Cm,0.01, method="sinkhorn_log")
        for k,G in res.items():
            img = barycentric_map(G, Xt)
            ent = -(G*ns*np.log(np.maximum(G*ns,1e-300))).sum(1).mean()
            print(s,t,"proj" if proj else "raw", k, "logreg+scaler", round(clf(img, ys),4), "no scaler", round(clf(img,ys,False),4), "row-entropy", round(ent,2), flush=True)
